import { readFileSync } from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import type { MappedFormat } from '../decode/mapped.js';
import { compileMapping, MappingSyntaxError, type CompiledMapping } from '../decode/mapping.js';
import { ConfigError, type ConfigProblem } from '../operator-errors.js';

/**
 * The pipeline keys of the mapped formats (`format: csv` and `format: json`): how the partner's
 * own file is read (`csv`, `json`) and the JSONata mapping that turns it into records
 * (`mapping`). Layout choices only: the mapping itself is an expression the partner's
 * integrator writes, checked at start-up (`definition.ts`), never code of ours.
 */

export const MAPPED_FORMATS = ['csv', 'json'] as const;
export type MappedFormatName = (typeof MAPPED_FORMATS)[number];

const oneCharacter = z.string().length(1, 'Expected one character');

export const csvOptionsSchema = z
  .strictObject({
    delimiter: oneCharacter.default(',').meta({
      description: 'The character between two cells.',
      examples: [';', '|'],
    }),
    quote: oneCharacter.default('"').meta({
      description:
        'The character a cell is quoted with (a cell holding the delimiter or a line break).',
    }),
    escape: oneCharacter.default('"').meta({
      description:
        'The character that makes the next quote part of a quoted cell; the default is the quote itself (`""`).',
      examples: ['\\'],
    }),
    encoding: z.enum(['utf-8', 'windows-1252', 'iso-8859-1']).default('utf-8').meta({
      description:
        'The text encoding of the file. UTF-8 is checked (a bad byte refuses the file, naming its offset); the two single-byte encodings cannot be wrong.',
    }),
    skipLines: z.int().min(0).max(1000).default(0).meta({
      description:
        'Lines at the top of the file read as nothing (a title, an export banner), before the header row. Line numbers in errors still count them.',
    }),
    header: z
      .union([z.literal(true), z.array(z.string().min(1)).min(1).max(1000)])
      .default(true)
      .meta({
        description:
          '`true`: the first row (after `skipLines`) names the columns; or the column names, in order, for a file without a header row. Each row becomes an object keyed by these names; empty cells are left out.',
        examples: [true, ['OrderNo', 'Sku', 'Qty']],
      }),
  })
  .meta({
    description: '`format: csv` only: how the CSV file is written. csv-parse reads it, streamed.',
  });

export const jsonOptionsSchema = z
  .strictObject({
    records: z
      .string()
      .min(1)
      .default('$')
      .meta({
        description:
          'A JSONata path from the document to the array of input objects the mapping sees one at a time (or, with `groupBy`, one group at a time). `$`: the document itself (an array, or one object).',
        examples: ['orders', 'export.data.shipments'],
      }),
  })
  .meta({
    description:
      '`format: json` only: where the input objects are in the document. The file is read whole, up to the JSON size limit.',
  });

export const mappingSchema = z
  .strictObject({
    jsonata: z.string().min(1).optional().meta({
      description:
        "The JSONata expression (jsonata 2.x). Without `groupBy` it sees one row (or input object) and returns one record, an array of records, or nothing; with `groupBy` it sees the array of one group's rows and returns one record. Give this or `file`.",
    }),
    file: z
      .string()
      .min(1)
      .optional()
      .meta({
        description:
          'A `.jsonata` file holding the expression, relative to the pipeline file. Give this or `jsonata`.',
        examples: ['mappings/acme-orders.jsonata'],
      }),
    groupBy: z
      .string()
      .min(1)
      .optional()
      .meta({
        description:
          "The column (or input object's field) whose value makes one record of consecutive rows, e.g. an order number repeated on each of its lines. A group's rows must be contiguous: a group that comes back later refuses the file, naming both lines.",
        examples: ['OrderNo'],
      }),
    timeoutMs: z.int().min(10).max(60_000).default(1_000).meta({
      description:
        'The longest one evaluation (one row, object or group) may run: longer refuses the file, naming the rows. The file as a whole has no such limit.',
    }),
    maxDepth: z.int().min(10).max(10_000).default(500).meta({
      description:
        'The deepest nesting of evaluation (recursion) one evaluation may reach: deeper refuses the file, naming the rows.',
    }),
  })
  .superRefine((mapping, context) => {
    if ((mapping.jsonata === undefined) === (mapping.file === undefined))
      context.addIssue({
        code: 'custom',
        path: ['jsonata'],
        message: 'Give the expression inline (jsonata) or in a file (file): one of them',
      });
  })
  .meta({
    description:
      "`format: csv` and `format: json`: the JSONata mapping from the partner's rows to records of `kind`. The business id is the pipeline's, whatever the mapping says; the onboarding profile fills what it leaves out. Guide: docs/formats.md.",
  });

/** The mapped-format keys of a pipeline, spread into its schema. */
export const mappedKeys = {
  csv: csvOptionsSchema.optional(),
  json: jsonOptionsSchema.optional(),
  mapping: mappingSchema.optional(),
};

export type CsvOptions = z.output<typeof csvOptionsSchema>;
export type JsonOptions = z.output<typeof jsonOptionsSchema>;
export type MappingOptions = z.output<typeof mappingSchema>;

/** Which of the keys go with which format: refused where they do not apply, required where they do. */
export function mappedKeyProblems(
  pipeline: { format: string; csv?: unknown; json?: unknown; mapping?: unknown },
  context: z.RefinementCtx,
): void {
  const mapped = (MAPPED_FORMATS as readonly string[]).includes(pipeline.format);
  if (mapped && pipeline.mapping === undefined)
    context.addIssue({
      code: 'custom',
      path: ['mapping'],
      message: `Required for format ${pipeline.format}`,
    });
  if (!mapped && pipeline.mapping !== undefined)
    context.addIssue({
      code: 'custom',
      path: ['mapping'],
      message: 'Only for format csv or json',
    });
  if (pipeline.csv !== undefined && pipeline.format !== 'csv')
    context.addIssue({ code: 'custom', path: ['csv'], message: 'Only for format csv' });
  if (pipeline.json !== undefined && pipeline.format !== 'json')
    context.addIssue({ code: 'custom', path: ['json'], message: 'Only for format json' });
}

/** What `mappedFormatOf` needs of a pipeline (a parsed definition, and its file when it has one). */
export interface MappedPipeline {
  readonly format: string;
  readonly csv?: CsvOptions | undefined;
  readonly json?: JsonOptions | undefined;
  readonly mapping?: MappingOptions | undefined;
  readonly file?: string;
}

const compiledFormats = new WeakMap<object, MappedFormat>();

/**
 * The pipeline's mapped format, compiled once per definition (start-up reads every pipeline
 * through here, so a mapping that does not compile stops the start naming its file and the
 * position); undefined for the other formats. Throws `ConfigError`.
 */
export function mappedFormatOf(pipeline: MappedPipeline): MappedFormat | undefined {
  const { mapping } = pipeline;
  if (mapping === undefined || !(MAPPED_FORMATS as readonly string[]).includes(pipeline.format))
    return undefined;
  const known = compiledFormats.get(pipeline);
  if (known) return known;
  const where = pipeline.file ?? '(pipeline)';
  const { expression, file, field } = mappingText(mapping, pipeline.file);
  const limits = { timeoutMs: mapping.timeoutMs, maxDepth: mapping.maxDepth };
  const compile = (text: string, named: string, inField: string) => {
    try {
      return compileMapping(text, limits);
    } catch (error) {
      if (!(error instanceof MappingSyntaxError)) throw error;
      throw new ConfigError([
        { file: where, field: inField, message: `${named} does not compile ${error.message}` },
      ]);
    }
  };
  const common = {
    mapping: compile(expression, file ?? 'The mapping', field),
    ...(mapping.groupBy !== undefined && { groupBy: mapping.groupBy }),
  };
  const made: MappedFormat =
    pipeline.format === 'csv'
      ? { ...common, format: 'csv', csv: pipeline.csv ?? csvOptionsSchema.parse({}) }
      : {
          ...common,
          format: 'json',
          records: recordsPath(pipeline.json ?? jsonOptionsSchema.parse({}), (text) =>
            compile(text, 'The records path', 'json.records'),
          ),
        };
  compiledFormats.set(pipeline, made);
  return made;
}

function recordsPath(json: JsonOptions, compile: (text: string) => CompiledMapping) {
  return { text: json.records, find: compile(json.records) };
}

/** The expression, inline or read from its file (relative to the pipeline file). */
function mappingText(
  mapping: MappingOptions,
  pipelineFile: string | undefined,
): { expression: string; file?: string; field: string } {
  if (mapping.file === undefined)
    return { expression: mapping.jsonata ?? '', field: 'mapping.jsonata' };
  const file = path.resolve(pipelineFile ? path.dirname(pipelineFile) : '.', mapping.file);
  try {
    return { expression: readFileSync(file, 'utf8'), file, field: 'mapping.file' };
  } catch (error) {
    throw new ConfigError([
      {
        file: pipelineFile ?? '(pipeline)',
        field: 'mapping.file',
        message: `Cannot read ${file}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`,
      },
    ]);
  }
}

/** The problems of a pipeline's mapping, for start-up and `lint` to report with the rest. */
export function mappedFormatProblems(pipeline: MappedPipeline): ConfigProblem[] {
  try {
    mappedFormatOf(pipeline);
    return [];
  } catch (error) {
    if (error instanceof ConfigError) return [...error.problems];
    throw error;
  }
}
