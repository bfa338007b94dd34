from .base import Shape
from .circle import Circle

__all__ = ["Circle", "Shape"]
