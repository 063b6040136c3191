//! A least-squares regression tree on binned features, and how it predicts (`grow` fits it).

#[derive(Debug, Clone)]
pub struct Split {
    pub feature: usize,
    /// Rows with a code <= bin (a value <= threshold) go left.
    pub bin: u8,
    pub threshold: f64,
    pub left: usize,
    pub right: usize,
    /// Reduction of the squared error brought by this split.
    pub gain: f64,
}

#[derive(Debug, Clone)]
pub struct Node {
    /// Output of the subtree's rows (leaf value for leaves), learning rate applied.
    pub value: f64,
    /// Training rows that reached this node.
    pub cover: f64,
    pub split: Option<Split>,
}

#[derive(Debug, Clone)]
pub struct Tree {
    pub nodes: Vec<Node>,
}

pub struct TreeParams {
    pub max_depth: usize,
    pub min_samples_leaf: usize,
    pub learning_rate: f64,
}

impl Tree {
    pub fn predict_binned(&self, codes: &[Vec<u8>], row: usize) -> f64 {
        let mut node = &self.nodes[0];
        while let Some(s) = &node.split {
            node = &self.nodes[if codes[s.feature][row] <= s.bin {
                s.left
            } else {
                s.right
            }];
        }
        node.value
    }

    pub fn splits_on(&self, feature: usize) -> bool {
        self.nodes
            .iter()
            .any(|n| n.split.as_ref().is_some_and(|s| s.feature == feature))
    }

    pub fn predict_row(&self, x: &[f64]) -> f64 {
        let mut node = &self.nodes[0];
        while let Some(s) = &node.split {
            node = &self.nodes[if x[s.feature] <= s.threshold {
                s.left
            } else {
                s.right
            }];
        }
        node.value
    }

    /// Cover-weighted mean output: the model's expectation over its training rows.
    pub fn expected_value(&self) -> f64 {
        let root = &self.nodes[0];
        self.leaves().map(|n| n.value * n.cover).sum::<f64>() / root.cover
    }

    fn leaves(&self) -> impl Iterator<Item = &Node> {
        self.nodes.iter().filter(|n| n.split.is_none())
    }

    pub fn depth(&self) -> usize {
        fn d(t: &Tree, i: usize) -> usize {
            match &t.nodes[i].split {
                Some(s) => 1 + d(t, s.left).max(d(t, s.right)),
                None => 0,
            }
        }
        d(self, 0)
    }
}
