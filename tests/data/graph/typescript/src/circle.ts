import { Base } from "./types";
import { square } from "./math";

export class Circle extends Base {
  constructor(private r: number) {
    super();
  }

  area(): number {
    return Math.PI * square(this.r);
  }
}
