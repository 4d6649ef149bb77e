"""The base of every tool's parameters model (pydantic): imported with the first model, never
by a start (core.toolspec names the models by where they live)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class Params(BaseModel):
    """The base of a tool's parameters model. Its validator and schema are built when first
    used (a call, a request's menu), not when the class is made."""

    model_config = ConfigDict(defer_build=True)
