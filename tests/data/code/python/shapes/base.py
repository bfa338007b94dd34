import abc
from typing import Protocol

UNIT = 1.0


class Named(Protocol):
    """Anything with a name."""

    def name(self) -> str: ...


class Shape(abc.ABC):
    """Anything with an area."""

    @abc.abstractmethod
    def area(self) -> float:
        raise NotImplementedError

    def describe(self) -> str:
        return f"{self.name()}: {self.area():.2f}"
