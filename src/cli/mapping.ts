import { existsSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { loadConfig } from '../config.js';
import { tryMappedFile, type TriedFile } from '../decode/mapped-try.js';
import { mappedFormatOf } from '../drops/definition-mapped.js';
import { loadPipelineFiles, readPipelines, type LoadedPipeline } from '../drops/definition.js';
import { isIngestError, toProblem, type ProblemDetails } from '../errors.js';
import { ConfigError } from '../operator-errors.js';
import { KINDS } from '../records/index.js';
import { CannotRead, type Output, parse } from './check-commands.js';
import { UsageError } from './help.js';

/** A JSON sample is read whole, as a drop reads one (runner.ts's default). */
const MAX_JSON_BYTES = 256 * 1024 * 1024;

/**
 * `mapping try <pipeline> <sample file>`: the records a pipeline's mapping makes of a sample
 * (after the onboarding profile), or the errors a drop's receipt would give. Nothing published.
 * Exit codes as `validate`: 0 valid, 1 invalid, 2 usage, or the pipeline, configuration or
 * file cannot be read.
 */
export async function mappingCommand(args: string[], io: Output): Promise<number> {
  const [sub, ...rest] = args;
  if (sub !== 'try') throw new UsageError('mapping has one subcommand: try', 'mapping');
  const { values, positionals } = parse('mapping', () =>
    parseArgs({
      args: rest,
      options: { json: { type: 'boolean' } },
      allowPositionals: true,
      strict: true,
    }),
  );
  const [which, file, ...extra] = positionals;
  if (!which || !file)
    throw new UsageError('mapping try needs a pipeline and a sample file', 'mapping');
  if (extra.length > 0)
    throw new UsageError(
      `mapping try takes two arguments; also got ${JSON.stringify(extra[0])}`,
      'mapping',
    );

  const { pipeline, onboarding } = pipelineNamed(which);
  const mapped = mappedFormatOf(pipeline);
  if (!mapped)
    throw new UsageError(
      `pipeline ${pipeline.name} has format ${pipeline.format}, not a mapped one (csv or json): use validate`,
      'mapping',
    );
  if (!existsSync(file)) throw new CannotRead(`cannot read ${file}: ENOENT`);
  let tried: TriedFile;
  try {
    tried = await tryMappedFile(file, {
      kind: KINDS[pipeline.kind],
      businessId: pipeline.businessId,
      mapped,
      onboarding,
      maxJsonBytes: MAX_JSON_BYTES,
    });
  } catch (error) {
    if (!isIngestError(error) || error.status >= 500) throw error;
    return refused(toProblem(error, path.basename(file)).problem, file, values.json === true, io);
  }
  io.out(values.json ? `${JSON.stringify(tried, null, 2)}\n` : describe(tried, file, pipeline));
  return tried.errors.length === 0 ? 0 : 1;
}

function refused(problem: ProblemDetails, file: string, json: boolean, io: Output): number {
  io.out(
    json
      ? `${JSON.stringify(problem, null, 2)}\n`
      : `${file}: refused — ${problem.detail ?? problem.title}\n`,
  );
  return 1;
}

function describe(tried: TriedFile, file: string, pipeline: LoadedPipeline): string {
  const lines = tried.records.map((record) => JSON.stringify(record));
  if (tried.errors.length === 0) {
    lines.push(
      `${file}: valid — ${tried.records.length} ${pipeline.kind} record(s) for ${pipeline.businessId}`,
    );
  } else {
    lines.push(
      `${file}: invalid — ${tried.errors.length} record(s) failed; a drop would accept none`,
    );
    for (const entry of tried.errors)
      lines.push(...entry.errors.map((message) => `  record ${entry.index}: ${message}`));
  }
  return `${lines.join('\n')}\n`;
}

/** A pipeline file, or a pipeline's name in pipelinesDirectory; with the profiles in force. */
function pipelineNamed(which: string) {
  try {
    const config = loadConfig({ brokerRequired: false });
    const onboarding = config.onboarding;
    if (/\.ya?ml$/.test(which)) {
      const [pipeline] = loadPipelineFiles([path.resolve(which)]);
      if (pipeline) return { pipeline, onboarding };
    }
    const { pipelines, problems } = readPipelines(path.resolve(config.pipelinesDirectory));
    const pipeline = pipelines.find((p) => p.name === which);
    if (pipeline) return { pipeline, onboarding };
    const problem = problems.find((p) => path.basename(p.file).replace(/\.ya?ml$/, '') === which);
    if (problem) throw new ConfigError([problem]);
    throw new UsageError(`no pipeline named ${which} in ${config.pipelinesDirectory}`, 'mapping');
  } catch (error) {
    if (error instanceof ConfigError)
      throw new CannotRead(
        `invalid pipeline or configuration (run "warehouse-ingest lint"):\n${error.message}`,
      );
    throw error;
  }
}
