/**
 * The run-management API's view of a training setting, attached to the setting in the config
 * schema so that `lib/runs/fields.ts` derives the API's field from it.
 *
 * @module
 */

/**
 * How the run-management API (`lib/runs`, `deno task runs`) shows a setting: the name agents
 * use for it (the Hermes tools' names), the key its run's config file sets when that is not the
 * name, a default of its own where runs differ from the trainer (they share two CPU cores), and
 * why it is locked when an agent may not edit it. Its type, range, choices and description are
 * the setting's own. Attached with `.meta(runApi({...}))`.
 */
export interface RunApiMeta {
  /** The API name (what `POST /config` takes). */
  name: string;
  /** The name or alias written to the run's config file; default: `name`. */
  key?: string;
  /** The API's default, when not the trainer's. */
  default?: unknown;
  /** Shown but not editable: who sets it. */
  locked?: string;
}

/**
 * The metadata that attaches {@link RunApiMeta} to a setting.
 *
 * @example
 * int().min(1).default(1000).meta(runApi({ name: "total_steps", key: "max_steps", default: 50 }));
 */
export function runApi(m: RunApiMeta): { runApi: RunApiMeta } {
  return { runApi: m };
}
