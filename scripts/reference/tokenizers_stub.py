"""Stand-in for the Rust `tokenizers` package in fashiond's reference environment: importable, unusable.

transformers 5 imports `tokenizers` at module level in integrations (gguf) that CLIPTextModel's import chain
pulls in, and Debian 13 ships no such package. scripts/reference/setup.sh installs this file as
tokenizers/__init__.py with a .dist-info whose version, 0.22.0+fashiond.stub, only passes transformers'
import-time version check; anything that actually uses it raises (transformers' fast tokenizers cannot be
built here). The fixtures tokenize with OpenAI's reference tokenizer
(diffusion/clip/testdata/reference_tokenizer.py) instead.
"""
import sys
import types


class _Unavailable:
    def __init__(self, *a, **k):
        raise ImportError("tokenizers is not installed in fashiond's reference environment (a stand-in)")

    @classmethod
    def from_file(cls, *a, **k):
        return cls()

    @classmethod
    def from_str(cls, *a, **k):
        return cls()


Tokenizer = AddedToken = Regex = Encoding = NormalizedString = PreTokenizedString = _Unavailable


def _attr(attr):
    if attr.startswith("__"):
        raise AttributeError(attr)
    return _Unavailable


def _module(name):
    m = types.ModuleType(__name__ + "." + name)
    m.__getattr__ = _attr
    sys.modules[m.__name__] = m
    return m


models = _module("models")
decoders = _module("decoders")
normalizers = _module("normalizers")
pre_tokenizers = _module("pre_tokenizers")
processors = _module("processors")
trainers = _module("trainers")
