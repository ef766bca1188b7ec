/**
 * The protobuf schema of Tinker's wire (`tinker_public.proto`, SDK 0.25), loaded once for the
 * protobufjs decoders and the small encoders.
 *
 * @module
 */

import protobuf from "protobufjs";
import { TINKER_PUBLIC_PROTO } from "./tinker_public_proto.ts";

const root = protobuf.parse(TINKER_PUBLIC_PROTO, { keepCase: true }).root;

/** A message type of the `tinker_public` package, e.g. `protoType("SampleResponse")`. */
export function protoType(name: string): protobuf.Type {
  return root.lookupType(`tinker_public.${name}`);
}
