import Registry from "./util.js";
import * as shapes from "./shapes.js";

function main() {
  const registry = new Registry();
  registry.add(new shapes.Circle(2));
  console.log(registry.items.length);
  return registry;
}

main();
