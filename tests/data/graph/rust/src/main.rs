mod shapes;
mod util;

use shapes::{Circle, Shape};

fn main() {
    let c = Circle::new(2.0);
    println!("{}", c.describe());
    println!("{}", util::total(&[c]));
}
