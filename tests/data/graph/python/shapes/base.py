class Shape:
    def area(self):
        raise NotImplementedError

    def describe(self):
        return f"{self.name()}: {self.area():.2f}"

    def name(self):
        return type(self).__name__.lower()
