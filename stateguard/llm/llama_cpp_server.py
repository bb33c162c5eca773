"""llama-cpp-python's OpenAI-compatible server, plus llama.cpp's `GET /props` route.

llama-cpp-python (`python -m llama_cpp.server`) has no route that names the context window it
loaded the model with, so a client cannot fit its prompts before the first refusal. This entry
point builds the same FastAPI app from the same command-line flags and adds `GET /props`
answering `{"n_ctx": N, "default_generation_settings": {"n_ctx": N}, "server":
"llama-cpp-python"}`, the shape llama.cpp's own server uses, so `stateguard.llm.server_info`
discovers both the same way. `scripts/serve_local.py` (`make serve-local`) starts this module.

    python -m stateguard.llm.llama_cpp_server --model m.gguf --n_ctx 4096 --port 8765
"""

from __future__ import annotations

import argparse
from typing import Any


def main(argv: list[str] | None = None) -> None:
    import uvicorn  # the llm-local extra brings llama-cpp-python[server] and these
    from llama_cpp.server.app import create_app
    from llama_cpp.server.cli import add_args_from_model
    from llama_cpp.server.settings import ModelSettings, ServerSettings, Settings

    parser = argparse.ArgumentParser(prog="python -m stateguard.llm.llama_cpp_server", description=__doc__)
    add_args_from_model(parser, Settings)
    given = {k: v for k, v in vars(parser.parse_args(argv)).items() if v is not None}
    server = ServerSettings(**{k: v for k, v in given.items() if k in ServerSettings.model_fields})
    model = ModelSettings(**{k: v for k, v in given.items() if k in ModelSettings.model_fields})
    app = create_app(server_settings=server, model_settings=[model])
    window = int(model.n_ctx) if model.n_ctx else None  # 0 would mean "the model's own", unknown here

    @app.get("/props", tags=["Extras"])
    def props() -> dict[str, Any]:
        out: dict[str, Any] = {"server": "llama-cpp-python", "model_alias": model.model_alias or model.model}
        if window is not None:
            out.update(n_ctx=window, default_generation_settings={"n_ctx": window})
        return out

    uvicorn.run(app, host=server.host, port=server.port)


if __name__ == "__main__":
    main()
