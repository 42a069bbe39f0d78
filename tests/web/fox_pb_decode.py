"""Decodes protobuf messages with Debian's python3-protobuf from the
FileDescriptorSet a Foxglove channel advertised (as a client does: no .proto
files, only the schema). stdin: {"fds": base64, "type": "foxglove.X",
"msgs": [base64, ...], "enums_as_ints": optional}; stdout: the messages as JSON (MessageToDict, field
names as in the schema; +inf as "Infinity", bytes as base64)."""
import base64
import json
import sys

from google.protobuf import descriptor_pb2, descriptor_pool, json_format
from google.protobuf import message_factory


def main():
    req = json.load(sys.stdin)
    fds = descriptor_pb2.FileDescriptorSet()
    fds.ParseFromString(base64.b64decode(req["fds"]))
    pool = descriptor_pool.DescriptorPool()
    for f in fds.file:
        pool.Add(f)
    desc = pool.FindMessageTypeByName(req["type"])
    if hasattr(message_factory, "GetMessageClass"):
        cls = message_factory.GetMessageClass(desc)
    else:
        cls = message_factory.MessageFactory(pool).GetPrototype(desc)
    out = []
    for m in req["msgs"]:
        msg = cls()
        msg.ParseFromString(base64.b64decode(m))
        out.append(json_format.MessageToDict(
            msg, preserving_proto_field_name=True,
            use_integers_for_enums=bool(req.get("enums_as_ints"))))
    json.dump({"files": [f.name for f in fds.file], "msgs": out}, sys.stdout)


if __name__ == "__main__":
    main()
