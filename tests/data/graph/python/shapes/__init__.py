from .base import Shape
from .circle import Circle
