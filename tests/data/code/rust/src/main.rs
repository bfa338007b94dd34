mod shapes;
mod util;

use shapes::{Circle, Shape};
use util::stats::total;

fn main() {
    let c = Circle::new(2.0);
    let areas: Vec<f64> = [c.clone(), Circle::new(1.0)].iter().map(|s| s.area()).collect();
    println!("{} {}", c.describe(), total(&areas));
}
