//! The one trait every fitted model offers, so importance and scoring code need not know which it is.
use crate::gbm::Gbm;
use crate::lasso::Lasso;
use ndarray::ArrayView2;

pub trait Regressor: Sync {
    fn predict(&self, x: ArrayView2<'_, f64>) -> Vec<f64>;
}

impl Regressor for Gbm {
    fn predict(&self, x: ArrayView2<'_, f64>) -> Vec<f64> {
        Gbm::predict(self, x)
    }
}

impl Regressor for Lasso {
    fn predict(&self, x: ArrayView2<'_, f64>) -> Vec<f64> {
        Lasso::predict(self, x).to_vec()
    }
}
