"""Which models take images: the model table's `images` field (core/models.toml, and the
user's own TETHER_HOME/models.toml), read here for the request about to be sent.

A request with an image is refused before it is sent to a model the table does not know to
take images, with a message saying so, instead of a server error (or, worse, a model that
quietly ignores the image). The `image_input` setting overrides the table: "on" for a model
it does not know (a vision model behind an OpenAI-compatible server), "off" never attaches
one. The built-in local backend never takes images, whatever the model (it has no image
encoder), so for it only "on" sends them.
"""

from __future__ import annotations

from ..core.model_table import ModelTable, builtin_table

WITHOUT_IMAGES = ("local",)
"""Providers that cannot carry an image to any model."""


def takes_images(provider: str, model: str, setting: str = "auto",
                 table: ModelTable | None = None) -> bool:
    """Whether a request may carry images to `model` of `provider` (`setting`: image_input;
    `table`: the model table in use, the built-in one by default)."""
    if setting != "auto":
        return setting == "on"
    if provider in WITHOUT_IMAGES:
        return False
    entry = (table or builtin_table()).entry(model.removeprefix("models/"))
    return bool(entry is not None and entry.images)


def refusal(provider: str, model: str, setting: str = "auto") -> str:
    """Why a request with images is not sent."""
    if setting == "off":
        return "Images are switched off (image_input = \"off\"); nothing was sent."
    return (f"{provider} model {model} is not known to take images, so nothing was sent. "
            "Use a model that does, or set image_input = \"on\" if this one does.")
