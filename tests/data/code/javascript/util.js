const path = require('path');

// The square of x.
function square(x) {
  return x * x;
}

const cube = (x) => x * square(x);

function* range(n) {
  for (let i = 0; i < n; i++) yield i;
}

/** Shapes by name. */
class Registry {
  items = [];

  add = (shape) => {
    this.items.push(shape);
  };

  static of(...shapes) {
    const r = new Registry();
    shapes.forEach(r.add);
    return r;
  }
}

module.exports = { square, cube, range, Registry, sep: path.sep };
