"""A minimal reader of TensorFlow Lite flatbuffers (schema v3), enough for
tflite2onnx.py: the model's operator codes, first subgraph, tensors,
buffers and the builtin options of the operators BlazePose uses.

A flatbuffer table starts at an offset; its first int32 is the signed
distance back to its vtable, whose uint16 entries give each field's offset
inside the table (0 = absent, use the default)."""
import struct


class FlatbufferError(Exception):
    """A buffer that is not a well-formed flatbuffer of the expected shape."""


class Table:
    """One flatbuffer table: field access by vtable slot."""

    def __init__(self, buf, pos):
        if pos < 0 or pos + 4 > len(buf):
            raise FlatbufferError("table offset %d out of range" % pos)
        self.buf = buf
        self.pos = pos
        self.vt = pos - struct.unpack_from("<i", buf, pos)[0]
        if self.vt < 0 or self.vt + 4 > len(buf):
            raise FlatbufferError("vtable offset %d out of range" % self.vt)
        self.vt_len = struct.unpack_from("<H", buf, self.vt)[0]

    def _field(self, slot):
        off = 4 + 2 * slot
        if off + 2 > self.vt_len:
            return 0
        return struct.unpack_from("<H", self.buf, self.vt + off)[0]

    def scalar(self, slot, fmt, default=0):
        """A scalar field (struct format fmt), or default when absent."""
        f = self._field(slot)
        if not f:
            return default
        return struct.unpack_from("<" + fmt, self.buf, self.pos + f)[0]

    def _indirect(self, slot):
        f = self._field(slot)
        if not f:
            return None
        at = self.pos + f
        return at + struct.unpack_from("<I", self.buf, at)[0]

    def table(self, slot):
        """A sub-table field, or None."""
        at = self._indirect(slot)
        return None if at is None else Table(self.buf, at)

    def string(self, slot):
        """A string field ('' when absent)."""
        at = self._indirect(slot)
        if at is None:
            return ""
        if at + 4 > len(self.buf):
            raise FlatbufferError("string offset %d out of range" % at)
        n = struct.unpack_from("<I", self.buf, at)[0]
        return self.buf[at + 4:at + 4 + n].decode("utf-8")

    def _vector(self, slot, elem_size):
        at = self._indirect(slot)
        if at is None:
            return 0, 0
        if at + 4 > len(self.buf):
            raise FlatbufferError("vector offset %d out of range" % at)
        n = struct.unpack_from("<I", self.buf, at)[0]
        if at + 4 + n * elem_size > len(self.buf):
            raise FlatbufferError("vector of %d at %d overruns the buffer" % (n, at))
        return at + 4, n

    def scalars(self, slot, fmt):
        """A vector of scalars as a list."""
        size = struct.calcsize(fmt)
        start, n = self._vector(slot, size)
        return [struct.unpack_from("<" + fmt, self.buf, start + i * size)[0] for i in range(n)]

    def bytes(self, slot):
        """A [ubyte] vector as bytes."""
        start, n = self._vector(slot, 1)
        return bytes(self.buf[start:start + n])

    def tables(self, slot):
        """A vector of tables."""
        start, n = self._vector(slot, 4)
        out = []
        for i in range(n):
            at = start + 4 * i
            out.append(Table(self.buf, at + struct.unpack_from("<I", self.buf, at)[0]))
        return out


# Builtin operator codes (tensorflow/lite/schema/schema.fbs, BuiltinOperator).
BUILTIN = {
    0: "ADD", 3: "CONV_2D", 4: "DEPTHWISE_CONV_2D", 6: "DEQUANTIZE", 14: "LOGISTIC",
    17: "MAX_POOL_2D", 19: "RELU", 21: "RELU6", 22: "RESHAPE", 23: "RESIZE_BILINEAR", 34: "PAD",
}
# TensorType values used by the models.
FLOAT32, FLOAT16, INT32 = 0, 1, 2
# Padding and ActivationFunctionType enums.
SAME, VALID = 0, 1
ACT_NONE, ACT_RELU, ACT_RELU6 = 0, 1, 3


def read_model(buf):
    """The parts of a .tflite file the converter needs, as plain Python values:
    {'ops': [...], 'tensors': [...], 'inputs': [...], 'outputs': [...]}"""
    if len(buf) < 8 or buf[4:8] != b"TFL3":
        raise FlatbufferError("not a TFLite file (no TFL3 identifier)")
    root = Table(buf, struct.unpack_from("<I", buf, 0)[0])
    codes = []
    for c in root.tables(1):
        code = max(c.scalar(0, "b"), c.scalar(3, "i"))
        codes.append(BUILTIN.get(code, "builtin code %d" % code if not c.string(1) else "custom " + c.string(1)))
    buffers = [b.bytes(0) for b in root.tables(4)]
    subgraphs = root.tables(2)
    if len(subgraphs) != 1:
        raise FlatbufferError("expected one subgraph, found %d" % len(subgraphs))
    sg = subgraphs[0]
    tensors = []
    for t in sg.tables(0):
        bi = t.scalar(2, "I")
        tensors.append({"name": t.string(3), "shape": t.scalars(0, "i"), "type": t.scalar(1, "b"),
                        "data": buffers[bi] if bi < len(buffers) else b""})
    ops = []
    for o in sg.tables(3):
        idx = o.scalar(0, "I")
        if idx >= len(codes):
            raise FlatbufferError("operator code index %d out of range" % idx)
        ops.append({"op": codes[idx], "inputs": o.scalars(1, "i"), "outputs": o.scalars(2, "i"),
                    "options": o.table(4)})
    return {"ops": ops, "tensors": tensors, "inputs": sg.scalars(1, "i"), "outputs": sg.scalars(2, "i")}
