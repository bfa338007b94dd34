import { Circle } from "./circle.js";
import * as fs from "fs";
import { cube } from "./math";

export function main(): void {
  const c = new Circle(2);
  fs.writeFileSync("out.txt", String(c.area() + cube(2)));
}
