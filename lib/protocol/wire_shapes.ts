/**
 * The shape of a request as it travels: which keys a JSON body carries and what kind of value
 * each holds (its `type` tag literally), without the run's own values. Request shapes recorded
 * from the official SDK (`deno task compat:sdk --record`) are compared with ours, so that every
 * request of our client carries what the SDK's carries (the Adam parameters in full,
 * `overwrite`…).
 *
 * @module
 */

/** A JSON value's shape: `"string"`, `"number"`, `"boolean"`, `"null"`, `[shape]`, `{key: shape}`. */
export type Shape = string | Shape[] | { [key: string]: Shape };

/** One recorded request: where it went and what its body looked like. */
export interface RequestShape {
  /** `POST /api/v1/optim_step`. */
  route: string;
  /** JSON bodies' shape; other bodies are their content type in angle brackets. */
  body: Shape;
}

/** Keys whose values are kept as they are: the tags that say what a request or chunk is. */
const LITERAL_KEYS = new Set(["type", "dtype", "loss_fn"]);

/**
 * The shape of a JSON value. Array elements are merged (an array of datums is one datum's
 * shape with every key any of them has).
 *
 * @example
 * jsonShape({ adam_params: { learning_rate: 1e-3 }, type: "optim_step" });
 * // { adam_params: { learning_rate: "number" }, type: "optim_step" }
 */
export function jsonShape(value: unknown, key?: string): Shape {
  if (value === null) return "null";
  if (Array.isArray(value)) {
    return value.length ? [value.map((v) => jsonShape(v)).reduce(mergeShapes)] : [];
  }
  if (typeof value === "object") {
    return Object.fromEntries(
      Object.keys(value as object).sort().map((k) => [
        k,
        jsonShape((value as Record<string, unknown>)[k], k),
      ]),
    );
  }
  if (typeof value === "string" && key && LITERAL_KEYS.has(key)) return value;
  return typeof value;
}

function mergeShapes(a: Shape, b: Shape): Shape {
  if (isRecord(a) && isRecord(b)) {
    const keys = [...new Set([...Object.keys(a), ...Object.keys(b)])].sort();
    return Object.fromEntries(
      keys.map((k) => [k, k in a && k in b ? mergeShapes(a[k], b[k]) : (a[k] ?? b[k])]),
    );
  }
  return a;
}

function isRecord(s: Shape): s is { [key: string]: Shape } {
  return typeof s === "object" && !Array.isArray(s);
}

/**
 * A path with its run id and checkpoint name replaced by placeholders, so that one route is
 * one key whatever run it was recorded in.
 *
 * @example
 * routeTemplate("/api/v1/training_runs/abc:train:0/checkpoints/weights/c1/ttl");
 * // "/api/v1/training_runs/{run}/checkpoints/{kind}/{name}/ttl"
 */
export function routeTemplate(pathname: string): string {
  return pathname
    .replace(/\/training_runs\/[^/]+/, "/training_runs/{run}")
    .replace(/\/checkpoints\/(weights|sampler_weights)\/[^/]+/, "/checkpoints/{kind}/{name}");
}

/** The shape of a request's body as it was sent (a copy is read; the request stays usable). */
export async function requestShape(req: Request): Promise<RequestShape> {
  const route = `${req.method} ${routeTemplate(new URL(req.url).pathname)}`;
  const type = req.headers.get("content-type") ?? "";
  const text = req.body ? await req.clone().text() : "";
  if (!text) return { route, body: "<empty>" };
  if (!type.includes("json")) return { route, body: `<${type.split(";")[0] || "unknown"}>` };
  try {
    return { route, body: jsonShape(JSON.parse(text)) };
  } catch {
    return { route, body: "<malformed json>" };
  }
}

/**
 * The differences between one of our request shapes and the SDK's for the same route, as
 * lines (`optim_step: adam_params.beta1 missing`); empty when ours carries everything the
 * SDK's does, with the same kinds of values and the same tags.
 */
export function shapeDifferences(ours: Shape, sdk: Shape, at = ""): string[] {
  if (isRecord(ours) && isRecord(sdk)) {
    return [...new Set([...Object.keys(ours), ...Object.keys(sdk)])].sort().flatMap((k) => {
      const path = at ? `${at}.${k}` : k;
      if (!(k in ours)) return [`${path} missing (the SDK sends ${JSON.stringify(sdk[k])})`];
      if (!(k in sdk)) return [`${path} sent, but the SDK does not send it`];
      return shapeDifferences(ours[k], sdk[k], path);
    });
  }
  if (Array.isArray(ours) && Array.isArray(sdk)) {
    return ours.length && sdk.length ? shapeDifferences(ours[0], sdk[0], `${at}[]`) : [];
  }
  return JSON.stringify(ours) === JSON.stringify(sdk)
    ? []
    : [`${at || "body"}: ${JSON.stringify(ours)}, the SDK's ${JSON.stringify(sdk)}`];
}
