from .settings import ROOT


def render(settings):
    items = (ROOT / settings["source"]).read_text().splitlines()
    shown = items[: settings.get("max_items", 10)]
    return "\n".join([f"== {settings['title']} ==", *shown])
