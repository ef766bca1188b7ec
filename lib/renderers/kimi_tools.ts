/**
 * Kimi K2.5/K2.6's tool declarations: each tool's JSON Schema written as a TypeScript function
 * type inside `namespace functions { … }`, the format of Moonshot's
 * `tool_declaration_ts.py`, which tinker-cookbook's `kimi_k25`/`kimi_k26` renderers put in
 * their `tool_declare` turn. Written here from reading that format's rules:
 *
 * - an object is `{` its fields `}`, required fields first, each group by name, one per line,
 *   two spaces deeper, separated by `,\n`; an optional field's name takes `?`;
 *   `additionalProperties` becomes a last `[k: string]: T` field (`any` for true, `never` for
 *   false); an object without fields is `{}`;
 * - a field's description is `// ` comment lines above it, then its constraints
 *   (`maxLength`, `minLength`, `pattern` on strings, `maximum`, `minimum` on numbers,
 *   `minItems`, `maxItems` on arrays) as one `// key: value, …` line by key, then
 *   `// Default: …`;
 * - `integer` is `number`; an enum is its values joined by ` | ` (strings quoted); `anyOf` is
 *   its types joined by ` | `; a list of types maps each (`object` → `{}`, `array` →
 *   `Array<any>`); an array is `Array<T>`, or `Array<` over lines when its items have comments;
 * - `$defs` become `interface NAME {…}` before the function, `$ref` names them, and a
 *   reference to `#` makes the parameters an `interface parameters`;
 * - a function is its description as comments, then `type NAME = (_: PARAMS) => any;`.
 *
 * @module
 */

import { pyJson } from "./parse.ts";
import type { ToolSpec } from "./types.ts";

type Schema = Record<string, unknown>;
const INDENT = "  ";

/** Where `$defs` and whether a reference to the root were met, while reading one function. */
interface Refs {
  defs: Map<string, Schema | boolean>;
  selfRef: boolean;
}

/** A schema's TypeScript type and the comment lines above a field of it. */
interface TsType {
  text(indent: string): string;
  comments(indent: string): string;
}

/** A value as Python's `str()` writes it (booleans and None capitalised). */
function pyStr(v: unknown): string {
  if (v === true) return "True";
  if (v === false) return "False";
  if (v === null || v === undefined) return "None";
  return typeof v === "string" ? v : JSON.stringify(v);
}

function descriptionLines(description: string, indent: string): string {
  return description.split("\n").map((l) => (l ? `${indent}// ${l}` : "")).join("\n");
}

/** The comment lines of a schema: its description, then its allowed constraints by key. */
function commentsOf(schema: Schema, constraintKeys: readonly string[]) {
  const description = typeof schema.description === "string" ? schema.description : "";
  const constraints = constraintKeys.filter((k) => k in schema).sort();
  return (indent: string): string => {
    const lines: string[] = [];
    if (description) lines.push(descriptionLines(description, indent));
    if (constraints.length) {
      lines.push(`${indent}// ${constraints.map((k) => `${k}: ${pyStr(schema[k])}`).join(", ")}`);
    }
    return lines.map((l) => `${l}\n`).join("");
  };
}

function scalar(type: string, schema: Schema = {}): TsType {
  const keys = type === "string"
    ? ["maxLength", "minLength", "pattern"]
    : type === "number" || type === "integer"
    ? ["maximum", "minimum"]
    : [];
  return { text: () => (type === "integer" ? "number" : type), comments: commentsOf(schema, keys) };
}

/** A field of an object type. */
interface Field {
  name: string;
  type: TsType;
  optional: boolean;
  default: unknown;
}

function objectType(schema: Schema, refs: Refs): TsType & { fields: Field[] } {
  if (schema.$defs && typeof schema.$defs === "object") {
    for (const [k, v] of Object.entries(schema.$defs as Schema)) refs.defs.set(k, v as Schema);
  }
  const ap = schema.additionalProperties;
  const extra = ap && typeof ap === "object" ? parseType(ap as Schema, refs) : ap;
  const props = (schema.properties ?? {}) as Record<string, Schema | boolean>;
  const required = new Set((schema.required ?? []) as string[]);
  const fields: Field[] = Object.entries(props).map(([name, prop]) => ({
    name,
    type: parseType(prop, refs),
    optional: !required.has(name),
    default: typeof prop === "object" ? prop.default : undefined,
  }));
  const byName = (a: { name: string }, b: { name: string }) => (a.name < b.name ? -1 : 1);
  const ordered = [
    ...fields.filter((f) => !f.optional).sort(byName),
    ...fields.filter((f) => f.optional).sort(byName),
  ];
  return {
    fields,
    comments: commentsOf(schema, []),
    text(indent: string): string {
      const inner = indent + INDENT;
      const lines = ordered.map((f) => fieldText(f, inner));
      if (extra !== undefined && extra !== null) {
        const t = extra === true
          ? "any"
          : extra === false
          ? "never"
          : (extra as TsType).text(inner);
        lines.push(`${inner}[k: string]: ${t}`);
      }
      return lines.length ? `{\n${lines.join(",\n")}\n${indent}}` : "{}";
    },
  };
}

function fieldText(f: Field, indent: string): string {
  let comments = f.type.comments(indent);
  if (f.default !== undefined && f.default !== null) {
    const d = typeof f.default === "number" || typeof f.default === "boolean"
      ? pyStr(f.default)
      : pyJson(f.default);
    comments += `${indent}// Default: ${d}\n`;
  }
  return `${comments}${indent}${f.name}${f.optional ? "?" : ""}: ${f.type.text(indent)}`;
}

function arrayType(schema: Schema, refs: Refs): TsType {
  const items = schema.items;
  const empty = !items || (typeof items === "object" && !Object.keys(items).length);
  const item = empty ? scalar("any") : parseType(items as Schema, refs);
  return {
    comments: commentsOf(schema, ["minItems", "maxItems"]),
    text(indent: string): string {
      const doc = item.comments(indent + INDENT);
      return doc
        ? `Array<\n${doc}${indent}${INDENT}${item.text(indent + INDENT)}\n${indent}>`
        : `Array<${item.text(indent)}>`;
    },
  };
}

const UNION: Record<string, string> = {
  string: "string",
  number: "number",
  integer: "number",
  boolean: "boolean",
  null: "null",
  object: "{}",
  array: "Array<any>",
};

/** A JSON Schema as its TypeScript type; a schema the format cannot write is an error. */
function parseType(schema: Schema | boolean, refs: Refs): TsType {
  if (typeof schema === "boolean") return scalar(schema ? "any" : "null");
  if (typeof schema.$ref === "string") {
    const ref = schema.$ref;
    let name: string;
    if (ref === "#") {
      refs.selfRef = true;
      name = "parameters";
    } else if (ref.startsWith("#/$defs/") && refs.defs.has(ref.slice(8))) {
      name = ref.split("/").at(-1)!;
    } else throw new Error(`kimi tool declaration: unsupported reference ${ref}`);
    return { text: () => name, comments: commentsOf(schema, []) };
  }
  if (Array.isArray(schema.anyOf)) {
    const types = (schema.anyOf as Schema[]).map((t) => parseType(t, refs));
    return {
      text: (indent) => types.map((t) => t.text(indent)).join(" | "),
      comments: commentsOf(schema, []),
    };
  }
  if (Array.isArray(schema.enum)) {
    const values = schema.enum.map((e) => (typeof e === "string" ? `"${e}"` : pyStr(e)));
    return { text: () => values.join(" | "), comments: commentsOf(schema, []) };
  }
  const type = schema.type;
  if (Array.isArray(type)) {
    const names = type.map((t) => {
      if (!(t in UNION)) throw new Error(`kimi tool declaration: unknown type ${t}`);
      return UNION[t];
    });
    return { text: () => names.join(" | "), comments: commentsOf(schema, []) };
  }
  if (type === "object") return objectType(schema, refs);
  if (type === "array") return arrayType(schema, refs);
  if (typeof type === "string") return scalar(type, schema);
  if (!Object.keys(schema).length) return scalar("any");
  throw new Error(`kimi tool declaration: not a JSON Schema: ${JSON.stringify(schema)}`);
}

function functionText(tool: ToolSpec): string {
  const refs: Refs = { defs: new Map(), selfRef: false };
  const params = objectType(tool.parameters ?? {}, refs);
  const interfaces: string[] = [];
  if (refs.selfRef) {
    // The parameters refer to themselves: an interface named `parameters`, its fields in the
    // schema's order (the format neither sorts these nor writes `additionalProperties`).
    const fields = params.fields.map((f) => fieldText(f, INDENT)).join(",\n");
    interfaces.push(`interface parameters {${fields ? `\n${fields}\n` : ""}}`);
  }
  for (const [name, def] of [...refs.defs]) {
    const body = parseType(def, refs).text("");
    const d = typeof def === "object" && typeof def.description === "string" ? def.description : "";
    interfaces.push(`${d ? `${descriptionLines(d, "")}\n` : ""}interface ${name} ${body}`);
  }
  const type = `type ${tool.name} = (_: ${refs.selfRef ? "parameters" : params.text("")}) => any;`;
  return [
    interfaces.join("\n"),
    tool.description ? descriptionLines(tool.description, "") : "",
    type,
  ]
    .filter(Boolean).join("\n");
}

/**
 * The tools as Kimi K2.5/K2.6 declare them: `# Tools`, then each tool a TypeScript function type
 * in `namespace functions`. Empty for no tools.
 *
 * @example
 * kimiToolsTypeScript([{ name: "f", description: "F.", parameters: { type: "object" } }]);
 * // "# Tools\n\n## functions\nnamespace functions {\n// F.\ntype f = (_: {}) => any;\n}\n"
 */
export function kimiToolsTypeScript(tools: readonly ToolSpec[]): string {
  if (!tools.length) return "";
  return `# Tools\n\n## functions\nnamespace functions {\n${
    tools.map(functionText).join("\n")
  }\n}\n`;
}
