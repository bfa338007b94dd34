#include <iostream>

#include "shape.hpp"

int main() {
    geo::Circle c = geo::Circle::unit();
    std::cout << c.describe() << geo::square(2.0) << std::endl;
    return 0;
}
