import { Circle, total } from './shapes.js';
import Default, { cube as c3 } from './util.js';

const shapes = [new Circle(2), new Circle(3)];
console.log(total(shapes), c3(2));

async function main() {
  const mod = await import('./shapes.js');
  return mod.total([]);
}

main().then(() => process.exit(0));
