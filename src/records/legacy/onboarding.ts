import type { z } from 'zod';
import type { KindName, RecordKind } from '../kind.js';
import { validateRecord } from '../validate.js';
import { IgnoredFields } from './ignored-fields.js';
import type { ConversionContext } from './converter.js';
import { setPath } from './paths.js';

/**
 * Onboarding profiles (spec §2: site, warehouse, owner, class, shipping, lanes, suppliers are
 * assigned to a business at onboarding). Per business and kind, a map of v2 paths to values
 * that fill what a legacy (v1) record cannot carry. `lines[].product.unitOfMeasure` fills the
 * field on every line. The business id `*` is the fallback profile (useful in sandbox).
 */
export type OnboardingProfile = Readonly<
  Partial<Record<KindName, Readonly<Record<string, unknown>>>> & {
    readonly legacy?: LegacyOptions | undefined;
  }
>;
export type OnboardingProfiles = Readonly<Record<string, OnboardingProfile>>;
/**
 * The profiles, or where to read the ones in force now: a configuration reload (SIGHUP) swaps
 * them, and each batch reads them once, when it begins.
 */
export type ProfilesSource = OnboardingProfiles | (() => OnboardingProfiles);

/** How a business's v1 inputs are read (`onboarding.<id>.legacy`); see docs/legacy-v1.md#onboarding-profiles. */
export interface LegacyOptions {
  /** The wire name of the returns field spec §4.3 calls `PlatformRef` (it carries the platform operator's brand). */
  readonly platformRef?: string | undefined;
  /** Fields beyond the v1 shape: `refuse` (400, the default) or `ignore` (listed as `ignoredFields`). */
  readonly unknownFields?: 'refuse' | 'ignore' | undefined;
}

export const FALLBACK_PROFILE = '*';

/** The kind and spec name of each renamable legacy field, by its option in `LegacyOptions`. */
export const RENAMABLE = { platformRef: { kind: 'return-goods', field: 'PlatformRef' } } as const;

/** An option of the business's profile, else of the fallback profile `*`. */
function legacyOption<K extends keyof LegacyOptions>(
  profiles: OnboardingProfiles,
  businessId: string,
  option: K,
): LegacyOptions[K] {
  const own = Object.hasOwn(profiles, businessId)
    ? profiles[businessId]?.legacy?.[option]
    : undefined;
  return own ?? profiles[FALLBACK_PROFILE]?.legacy?.[option];
}

/**
 * Everything the business's onboarding profile says about converting its v1 `kind` records:
 * the values that fill what v1 lacks, its wire names, and whether unknown fields are ignored
 * (then `ignored` collects them for the answer).
 */
export function conversionContext(
  source: ProfilesSource,
  businessId: string,
  kind: KindName,
  receivedAt: string,
): ConversionContext {
  const profiles = typeof source === 'function' ? source() : source;
  const defaults = profileFor(profiles, businessId, kind);
  const platformRef = legacyOption(profiles, businessId, 'platformRef');
  const ignore = legacyOption(profiles, businessId, 'unknownFields') === 'ignore';
  return {
    receivedAt,
    ...(defaults && { defaults }),
    ...(platformRef !== undefined &&
      kind === RENAMABLE.platformRef.kind && {
        names: { [RENAMABLE.platformRef.field]: platformRef },
      }),
    ...(ignore && { ignored: new IgnoredFields() }),
  };
}

export function profileFor(
  profiles: OnboardingProfiles,
  businessId: string,
  kind: KindName,
): Readonly<Record<string, unknown>> | undefined {
  return (
    (Object.hasOwn(profiles, businessId) ? profiles[businessId]?.[kind] : undefined) ??
    profiles[FALLBACK_PROFILE]?.[kind]
  );
}

type Def = {
  type: string;
  shape?: Record<string, z.ZodType>;
  innerType?: z.ZodType;
  element?: z.ZodType;
  in?: z.ZodType;
};
const defOf = (schema: z.ZodType): Def => (schema as unknown as { _zod: { def: Def } })._zod.def;

/** The schema at a dotted path (`[]` steps into array items), or undefined when the kind has no such field. */
function schemaAt(schema: z.ZodType, path: string): z.ZodType | undefined {
  let node: z.ZodType | undefined = schema;
  for (const segment of path.split('.')) {
    const isArray = segment.endsWith('[]');
    const key = isArray ? segment.slice(0, -2) : segment;
    node = unwrap(node);
    const shape = node && defOf(node).shape;
    node = shape && Object.hasOwn(shape, key) ? shape[key] : undefined;
    if (node && isArray) {
      const array = unwrap(node);
      node = array && defOf(array).type === 'array' ? defOf(array).element : undefined;
    }
    if (!node) return undefined;
  }
  return node;
}

function unwrap(schema: z.ZodType | undefined): z.ZodType | undefined {
  let node = schema;
  for (let depth = 0; node && depth < 8; depth++) {
    const def = defOf(node);
    if (def.innerType) node = def.innerType;
    else if (def.type === 'pipe' && def.in) node = def.in;
    else return node;
  }
  return node;
}

/**
 * Problems with one profile entry: an unknown path, or a value of the wrong type. The value is
 * checked by validating a probe record that holds only it; an error at that path is its own.
 */
export function profileEntryProblems(kind: RecordKind, path: string, value: unknown): string[] {
  if (
    !/^[A-Za-z0-9_]+(\[\])?(\.[A-Za-z0-9_]+(\[\])?)*$/.test(path) ||
    !schemaAt(kind.schema, path)
  ) {
    return [`Unknown ${kind.label} field "${path}"`];
  }
  const probe: Record<string, unknown> = {};
  const concrete = path.replaceAll('[].', '.0.');
  setProbe(probe, concrete, value);
  const at = concrete.replace(/\.(\d+)(?=\.|$)/g, '[$1]');
  const result = validateRecord(kind, probe, '');
  if (result.ok) return [];
  // Inside a profile value, a missing field is no fault of the profile: the converter fills
  // some (an address's shipmentId is the order's), and validation reports the rest per record.
  return result.errors.filter(
    (error) =>
      error.startsWith(`${at}:`) ||
      ((error.startsWith(`${at}.`) || error.startsWith(`${at}[`)) && !error.endsWith(': Required')),
  );
}

function setProbe(target: Record<string, unknown>, path: string, value: unknown): void {
  const keys = path.split('.');
  let node: Record<string, unknown> | unknown[] = target;
  for (let i = 0; i < keys.length - 1; i++) {
    const key = keys[i]!;
    const nextIsIndex = /^\d+$/.test(keys[i + 1]!);
    const container = node as Record<string, unknown>;
    container[key] ??= nextIsIndex ? [] : {};
    node = container[key] as Record<string, unknown>;
  }
  if (keys.length === 1) setPath(target, path, value);
  else (node as Record<string, unknown>)[keys.at(-1)!] = value;
}
