"""Tests of the origin converters, run by perception/origin_npm_test.go
(TestOriginConverterScripts) with the real model files extracted from the
npm tarballs: ORIGIN_BLAZEPOSE_LITE=<.tflite>,
ORIGIN_REALESR_GENERAL_X4V3=<.param>,<.bin>. Tests needing a file the
environment lacks are skipped."""
import os
import random
import struct
import unittest

import numpy as np
import onnx

import ncnn2onnx
import tflite2onnx
import tflite_reader

# Mutation rounds of the robustness tests (each a full parse).
TFLITE_MUTATIONS = 300
NCNN_MUTATIONS = 40
# Exceptions a malformed input may raise: all are caught by main() and
# reported as "<converter>: <file>: <reason>" with exit status 1.
CLEAN_ERRORS = (tflite2onnx.ConvertError, tflite_reader.FlatbufferError, ncnn2onnx.ConvertError,
                ValueError, KeyError, IndexError, struct.error, onnx.checker.ValidationError)


def env_files(name):
    v = os.environ.get(name, "")
    return v.split(",") if v else None


class NcnnTests(unittest.TestCase):
    def test_unknown_layer_is_named(self):
        param = "7767517\n2 2\nInput in 0 1 data\nSoftmax sm 1 1 data output 0=0\n"
        with self.assertRaisesRegex(ncnn2onnx.ConvertError, "unsupported ncnn layer type Softmax"):
            ncnn2onnx.convert(param, b"")

    def test_weight_tags(self):
        """A 1x1 convolution with 2 output and 1 input channels: fp16-tagged
        and fp32-tagged weights give the same float32 initializer; the
        bias is raw float32 after them."""
        param = "7767517\n2 2\nInput in 0 1 data\nConvolution conv 1 1 data output 0=2 1=1 5=1 6=2\n"
        w, bias = np.array([0.5, -2.0], dtype=np.float32), np.array([1.0, 3.0], dtype=np.float32)
        fp16 = struct.pack("<I", ncnn2onnx.TAG_FP16) + w.astype("<f2").tobytes() + bias.tobytes()
        fp32 = struct.pack("<I", ncnn2onnx.TAG_FP32) + w.astype("<f4").tobytes() + bias.tobytes()
        for data in (fp16, fp32):
            model = ncnn2onnx.convert(param, data)
            inits = {i.name: onnx.numpy_helper.to_array(i) for i in model.graph.initializer}
            np.testing.assert_array_equal(inits["conv_W"].reshape(-1), w)
            np.testing.assert_array_equal(inits["conv_B"], bias)
            self.assertEqual(inits["conv_W"].dtype, np.float32)

    def test_unknown_tag(self):
        param = "7767517\n2 2\nInput in 0 1 data\nConvolution conv 1 1 data output 0=1 1=1 6=1\n"
        with self.assertRaisesRegex(ncnn2onnx.ConvertError, "storage tag 0x12345678"):
            ncnn2onnx.convert(param, struct.pack("<I", 0x12345678) + b"\0\0\0\0")

    def test_leftover_weights(self):
        param = "7767517\n2 2\nInput in 0 1 data\nPReLU p 1 1 data output 0=1\n"
        with self.assertRaisesRegex(ncnn2onnx.ConvertError, "4 bytes left over"):
            ncnn2onnx.convert(param, b"\0" * 8)

    def test_real_model_mutations(self):
        files = env_files("ORIGIN_REALESR_GENERAL_X4V3")
        if not files:
            self.skipTest("ORIGIN_REALESR_GENERAL_X4V3 not set")
        with open(files[0], encoding="ascii") as f:
            lines = f.read().splitlines()
        with open(files[1], "rb") as f:
            data = f.read()
        model = ncnn2onnx.convert("\n".join(lines), data)
        self.assertEqual([o.name for o in model.graph.output], ["output"])
        rnd = random.Random(1)
        for _ in range(NCNN_MUTATIONS):
            mutated = list(lines)
            i = rnd.randrange(2, len(mutated))
            tokens = mutated[i].split()
            j = rnd.randrange(len(tokens))
            tokens[j] = rnd.choice(["Softmax", "0=7", "9=5", "x", "-23310=3,1", "1=0", ""])
            mutated[i] = " ".join(tokens)
            try:
                ncnn2onnx.convert("\n".join(mutated), data)
            except CLEAN_ERRORS:
                pass


class TfliteTests(unittest.TestCase):
    def setUp(self):
        files = env_files("ORIGIN_BLAZEPOSE_LITE")
        if not files:
            self.skipTest("ORIGIN_BLAZEPOSE_LITE not set")
        with open(files[0], "rb") as f:
            self.buf = f.read()

    def test_names_and_layouts(self):
        model = tflite2onnx.Converter(tflite_reader.read_model(self.buf)).convert()
        g = model.graph
        self.assertEqual([i.name for i in g.input], ["input_1"])
        dims = [d.dim_value for d in g.input[0].type.tensor_type.shape.dim]
        self.assertEqual(dims, [1, 256, 256, 3])
        self.assertEqual([o.name for o in g.output], ["Identity", "Identity_1", "Identity_2", "Identity_3", "Identity_4"])
        for init in g.initializer:
            self.assertIn(init.data_type, (onnx.TensorProto.FLOAT, onnx.TensorProto.INT64), init.name)

    def test_unknown_operator_is_named(self):
        saved = dict(tflite_reader.BUILTIN)
        del tflite_reader.BUILTIN[14]  # LOGISTIC: used once by the pose models
        try:
            with self.assertRaisesRegex(tflite2onnx.ConvertError, "unsupported TFLite operator builtin code 14"):
                tflite2onnx.Converter(tflite_reader.read_model(self.buf)).convert()
        finally:
            tflite_reader.BUILTIN.clear()
            tflite_reader.BUILTIN.update(saved)

    def test_not_tflite(self):
        with self.assertRaisesRegex(tflite_reader.FlatbufferError, "TFL3"):
            tflite_reader.read_model(b"\0" * 64)

    def test_mutations_fail_cleanly(self):
        """Random bytes overwritten in the flatbuffer's tables (its first and
        last 64 KiB, where the vtables and offsets are) are either read or
        refused with a clean error, never a crash or a hang."""
        rnd = random.Random(2)
        n = len(self.buf)
        for _ in range(TFLITE_MUTATIONS):
            b = bytearray(self.buf)
            for _ in range(rnd.randint(1, 8)):
                region = rnd.choice([(0, 1 << 16), (n - (1 << 16), n)])
                b[rnd.randrange(*region)] = rnd.randrange(256)
            try:
                tflite_reader.read_model(bytes(b))
            except CLEAN_ERRORS:
                pass


if __name__ == "__main__":
    unittest.main()
