import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';
import { ConfigError, type ConfigProblem } from '../operator-errors.js';
import { issueProblems } from '../config.js';
import { checkNulBytes } from '../config/nul-bytes.js';
import { PARSE_OPTIONS } from '../records/issues.js';
import { pipelineSchema } from './definition-schema.js';
import { mappedFormatProblems } from './definition-mapped.js';

/**
 * Pipeline definitions: one YAML file per partner drop under `pipelines/`, read and validated at
 * start-up; errors name the file and the field. The schema is in definition-schema.ts.
 */

export { pipelineSchema } from './definition-schema.js';
export type { SecretRef } from '../stores/secret-ref.js';

export type PipelineDefinition = Readonly<z.infer<typeof pipelineSchema>>;
/** A definition and the file it came from (for errors that name it). */
export type LoadedPipeline = PipelineDefinition & { readonly file: string };

/** Reads every `*.yaml` / `*.yml` directly in `directory`; all problems of all files at once. */
export function loadPipelines(
  directory: string,
  options: { tenants?: readonly string[] } = {},
): LoadedPipeline[] {
  const { pipelines, problems } = readPipelines(directory, options);
  if (problems.length > 0) throw new ConfigError(problems);
  return pipelines;
}

/**
 * The valid pipelines of `directory` and the problems of the others, for callers that go on
 * checking the valid ones (their secrets) so that one run reports everything.
 */
export function readPipelines(
  directory: string,
  options: { tenants?: readonly string[] } = {},
): { pipelines: LoadedPipeline[]; problems: ConfigProblem[] } {
  let files: string[];
  try {
    files = readdirSync(directory)
      .filter((f) => /\.ya?ml$/.test(f))
      .sort();
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return { pipelines: [], problems: [] };
    throw error;
  }
  return readPipelineFiles(
    files.map((name) => path.join(directory, name)),
    options,
  );
}

/** Reads the given pipeline files; all problems of all files at once. */
export function loadPipelineFiles(
  files: readonly string[],
  options: { tenants?: readonly string[] } = {},
): LoadedPipeline[] {
  const { pipelines, problems } = readPipelineFiles(files, options);
  if (problems.length > 0) throw new ConfigError(problems);
  return pipelines;
}

function readPipelineFiles(
  files: readonly string[],
  options: { tenants?: readonly string[] },
): { pipelines: LoadedPipeline[]; problems: ConfigProblem[] } {
  const problems: ConfigProblem[] = [];
  const pipelines: LoadedPipeline[] = [];
  const names = new Map<string, string>();
  for (const file of files) {
    const before = problems.length;
    const parsed = parsePipeline(file, problems);
    if (!parsed) continue;
    const earlier = names.get(parsed.name);
    if (earlier)
      problems.push({
        file,
        field: 'name',
        message: `"${parsed.name}" is already the name of ${earlier}`,
      });
    names.set(parsed.name, file);
    if (options.tenants && !options.tenants.includes(parsed.businessId)) {
      problems.push({
        file,
        field: 'businessId',
        message: `No tenant has business id "${parsed.businessId}"`,
      });
    }
    if (
      parsed.source.type === 'sftp' &&
      !parsed.source.hostKeyFingerprints?.length &&
      !parsed.source.knownHosts
    ) {
      problems.push({
        file,
        field: 'source.hostKeyFingerprints',
        message:
          'Pin the server key (hostKeyFingerprints or knownHosts): host keys are never trusted blindly',
      });
    }
    if (parsed.source.type === 'sftp' && !parsed.source.password && !parsed.source.privateKey) {
      problems.push({
        file,
        field: 'source.privateKey',
        message: 'Give privateKey or password (by env or file)',
      });
    }
    const outbound = parsed.events?.path;
    if (outbound && [parsed.after.processedFolder, parsed.after.failedFolder].includes(outbound))
      problems.push({
        file,
        field: 'events.path',
        message: `"${outbound}" is where inputs are settled: give outbound events their own folder`,
      });
    const loaded = Object.freeze({ ...parsed, file });
    problems.push(...mappedFormatProblems(loaded)); // compiled now: a syntax error stops the start
    if (problems.length === before) pipelines.push(loaded);
  }
  return { pipelines, problems };
}

function parsePipeline(
  file: string,
  problems: ConfigProblem[],
): z.infer<typeof pipelineSchema> | undefined {
  let raw: unknown;
  try {
    raw = parseYaml(readFileSync(file, 'utf8'));
  } catch (error) {
    problems.push({
      file,
      field: '(file)',
      message: ((error as Error).message.split('\n')[0] ?? 'unreadable').slice(0, 200),
    });
    return undefined;
  }
  const nul = checkNulBytes(raw, () => file);
  problems.push(...nul.problems);
  const result = pipelineSchema.safeParse(raw, PARSE_OPTIONS);
  if (result.success) return nul.problems.length === 0 ? result.data : undefined;
  problems.push(...issueProblems(nul.others(result.error.issues), () => file));
  return undefined;
}

/** The JSON Schema of a pipeline file, for editor completion (`pipelines/pipeline.schema.json`). */
export function pipelineJsonSchema(): Record<string, unknown> {
  return {
    $id: 'https://warehouse-ingest/pipeline.schema.json',
    title: 'warehouse-ingest pipeline',
    ...z.toJSONSchema(pipelineSchema, { io: 'input' }),
  };
}
