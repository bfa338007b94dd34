"""Shapes and their areas."""

from .base import Shape
from .circle import Circle as Round, unit

__all__ = ["Shape", "Round", "unit"]
