#include "shape.hpp"

#include <sstream>

namespace geo {

std::string Shape::describe() const {
    std::ostringstream out;
    out << "area " << area();
    return out.str();
}

Circle::Circle(double r) : r_(r) {}

double Circle::area() const {
    return kPi * square(r_);
}

Circle Circle::unit() {
    return Circle(1.0);
}

}  // namespace geo
