import Panel from "./components";
import { Circle } from "./shapes";
import { createRoot } from "react-dom/client";

const shapes = [new Circle(1), new Circle(2)];

export function App() {
  return <Panel shapes={shapes} />;
}

createRoot(document.getElementById("root")!).render(<App />);
