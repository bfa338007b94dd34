#include <iostream>
#include <memory>

#include "shape.hpp"

struct Registry {
    geo::Shapes items;

    void add(geo::Shape *s) { items.push_back(s); }

    double total() const {
        double sum = 0;
        for (auto *s : items) sum += s->area();
        return sum;
    }
};

int main() {
    Registry registry;
    auto c = std::make_unique<geo::Circle>(2.0);
    registry.add(c.get());
    registry.add(new geo::Circle(geo::Circle::unit()));
    std::cout << registry.total() << std::endl;
    return 0;
}
