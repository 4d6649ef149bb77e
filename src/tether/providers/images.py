"""Which models take images: a table of model-name patterns, per provider.

A request with an image is refused before it is sent to a model this table does not know
to take images, with a message saying so, instead of a server error (or, worse, a model
that quietly ignores the image). The `image_input` setting overrides the table: "on" for a
model it does not know (a vision model behind an OpenAI-compatible server), "off" never
attaches one.

Hosted models: the providers' model pages (OpenAI's GPT-4o, GPT-4.1, GPT-5 and o-series
take image input; every Claude 3 and later model; every Gemini model). Open-weight models,
served by Ollama or an OpenAI-compatible server: the vision families by their usual names.
The built-in local backend never takes images.
"""

from __future__ import annotations

from fnmatch import fnmatchcase

OPEN_VISION_MODELS = (
    "llava*", "bakllava*", "*vision*", "*-vl*", "*vl:*", "qwen2.5vl*", "qwen3-vl*", "gemma3*",
    "minicpm-v*", "moondream*", "pixtral*", "llama4*", "mistral-small3.1*", "mistral-small3.2*",
)
IMAGE_MODELS: dict[str, tuple[str, ...]] = {
    "openai": ("gpt-4o*", "chatgpt-4o*", "gpt-4.1*", "gpt-4.5*", "gpt-4-turbo*", "gpt-5*", "o1",
               "o1-20*", "o3*", "o4*", *OPEN_VISION_MODELS),
    "anthropic": ("claude-3*", "claude-sonnet-4*", "claude-opus-4*", "claude-haiku-4*"),
    "gemini": ("gemini-*",),
    "ollama": OPEN_VISION_MODELS,
}
"""Model-name patterns (fnmatch, lower case) of the models that take images, per provider."""


def takes_images(provider: str, model: str, setting: str = "auto") -> bool:
    """Whether a request may carry images to `model` of `provider` (`setting`: image_input)."""
    if setting != "auto":
        return setting == "on"
    name = model.lower().removeprefix("models/")
    return any(fnmatchcase(name, pattern) for pattern in IMAGE_MODELS.get(provider, ()))


def refusal(provider: str, model: str, setting: str = "auto") -> str:
    """Why a request with images is not sent."""
    if setting == "off":
        return "Images are switched off (image_input = \"off\"); nothing was sent."
    return (f"{provider} model {model} is not known to take images, so nothing was sent. "
            "Use a model that does, or set image_input = \"on\" if this one does.")
