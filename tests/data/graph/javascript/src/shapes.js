import { square } from "./util.js";
import path from "node:path";

export class Shape {
  area() {
    return 0;
  }

  describe() {
    return `${this.name()}: ${this.area()}`;
  }

  name() {
    return path.basename("shape");
  }
}

export class Circle extends Shape {
  constructor(r) {
    super();
    this.r = r;
  }

  area() {
    return Math.PI * square(this.r);
  }
}
