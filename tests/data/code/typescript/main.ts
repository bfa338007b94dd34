import { Circle, Kind, type Shape } from "./shapes";
import * as util from "./util";
import fs = require("fs");
export { square as sq } from "./util";

class Registry<T extends Shape> {
  private items: Map<string, T> = new Map();

  add(item: T): void {
    this.items.set(item.name, item);
  }

  total = (): number => [...this.items.values()].reduce((sum, s) => sum + s.area(), 0);
}

const registry = new Registry<Circle>();
registry.add(new Circle(2));
console.log(registry.total(), util.cube(3), Kind.Circle);
fs.writeFileSync("out.txt", String(util.Geometry.distance({ x: 0, y: 0 }, { x: 3, y: 4 })));
