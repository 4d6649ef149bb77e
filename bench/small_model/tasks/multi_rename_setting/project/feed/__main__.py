from .render import render
from .settings import load

print(render(load()))
