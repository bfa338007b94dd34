pub type Area = f64;

pub trait Named {
    fn name(&self) -> String;
}

pub fn square(x: f64) -> f64 {
    x * x
}

pub mod stats {
    use super::Area;

    pub fn total(areas: &[Area]) -> Area {
        areas.iter().copied().sum()
    }
}
