// Shapes and their areas.
import { square } from './util.js';
import * as log from './log.js';

export const UNIT = 1;

/** A shape with an area. */
export class Shape {
  constructor(name) {
    this.name = name;
  }

  area() {
    return 0;
  }

  describe() {
    return `${this.name}: ${this.area()}`;
  }
}

/**
 * A circle of radius r.
 */
export class Circle extends Shape {
  constructor(r) {
    super('circle');
    this.r = r;
  }

  area() {
    return Math.PI * square(this.r);
  }
}

export function total(shapes) {
  log.info('total');
  return shapes.reduce((sum, s) => sum + s.area(), 0);
}
