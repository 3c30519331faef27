//! The burn-store load against the `Arrays` path, for tests/burn_store.rs and
//! tests/burn_store_f32.rs (one device precision per process).

use burn::module::{Module, ModuleVisitor, Param};
use burn::nn::loss::CrossEntropyLossConfig;
use burn::optim::GradientsParams;
use burn::tensor::{DType, Device, Tensor};
use parity_train::dataset::Dataset;
use parity_train::models::{
    self, Cnn1d, CnnBn, Gpt, GptSize, LeNet, LeNetSize, LinearWeights, ModelInput, ModelSize,
    ParityModel, Probe, Transformer, TransformerSize,
};

/// The transformer at two layers: PyTorch's `enc.layers.{i}.…` names.
pub const TWO_LAYERS: TransformerSize = TransformerSize {
    d_model: 12,
    heads: 3,
    layers: 2,
    d_ff: 20,
};

/// lenet at another size than the seed's.
pub const NARROW_LENET: LeNetSize = LeNetSize {
    conv1: 3,
    conv2: 5,
    hidden: 7,
};

/// gpt at a small size: 3 blocks of 3 heads of width 4, a context of 5, 11 tokens.
pub const SMALL_GPT: GptSize = GptSize {
    d_model: 12,
    heads: 3,
    layers: 3,
    d_ff: 20,
    context: 5,
    vocab: 11,
};

/// The samples of the gpt data of these tests.
pub const GPT_N: usize = 24;

/// Every model at its default size, the transformer at two layers, lenet and gpt at another
/// size too, loaded through
/// burn-store (`models::build_with`, the Linear weights from the arrays as the trainer loads
/// them, or through burn-store too) and wholly from the arrays (`models::build_from_arrays`)
/// on `device`, whose float dtype is `dtype`: the same values bit for bit, in the same order,
/// dtype and shapes, tracking gradients alike. The trainer's load also computes exactly as the
/// arrays path's model: the same loss and gradients on a batch, bit for bit.
pub fn same_as_arrays(device: &Device, dtype: DType) {
    let conv = ModelSize::from(super::CONV);
    let cnn1d = super::dataset(super::cnn1d_arrays(super::CONV));
    let cnn_bn = super::dataset(super::cnn_bn_arrays(super::CONV));
    for linear in [LinearWeights::Arrays, LinearWeights::Store] {
        same::<Cnn1d>(&conv, &cnn1d, device, dtype, linear);
        same::<CnnBn>(&conv, &cnn_bn, device, dtype, linear);
        for size in [super::TRANSFORMER, TWO_LAYERS] {
            let data = super::dataset(super::transformer_arrays(size));
            same::<Transformer>(&ModelSize::from(size), &data, device, dtype, linear);
        }
        for size in [super::LENET, NARROW_LENET] {
            let data = super::dataset(super::lenet_arrays(size));
            same::<LeNet>(&ModelSize::from(size), &data, device, dtype, linear);
        }
        for size in [super::GPT, SMALL_GPT] {
            let data = super::dataset(super::gpt_arrays(size, GPT_N));
            same::<Gpt>(&ModelSize::from(size), &data, device, dtype, linear);
        }
    }
}

/// Each float tensor of a module in its order (running statistics too): its dtype, shape,
/// whether it tracks gradients, and its bytes.
#[derive(Default)]
struct Tensors(Vec<(DType, Vec<usize>, bool, Vec<u8>)>);

impl ModuleVisitor for Tensors {
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
        let t = param.val();
        let (dtype, dims, grad) = (t.dtype(), t.dims().to_vec(), t.is_require_grad());
        self.0
            .push((dtype, dims, grad, t.into_data().as_bytes().to_vec()));
    }
}

fn tensors<M: Module>(model: &M) -> Vec<(DType, Vec<usize>, bool, Vec<u8>)> {
    let mut visitor = Tensors::default();
    model.visit(&mut visitor);
    visitor.0
}

fn bits(values: Vec<Vec<f64>>) -> Vec<Vec<u64>> {
    let bits = |v: Vec<f64>| v.into_iter().map(f64::to_bits).collect();
    values.into_iter().map(bits).collect()
}

fn same<M: ParityModel>(
    size: &ModelSize,
    data: &Dataset,
    device: &Device,
    dtype: DType,
    linear: LinearWeights,
) {
    let stored: M = models::build_with(size, data, device, linear).expect("the burn-store load");
    let arrays: M = models::build_from_arrays(size, data, device).expect("the arrays path");
    let name = format!("{} {size:?} {linear:?}", M::NAME);
    assert_eq!(stored.size(), *size, "{name}");
    let params = bits(models::param_values(&stored));
    assert_eq!(params, bits(models::param_values(&arrays)), "{name}");
    let buffers = bits(models::buffer_values(&stored));
    assert_eq!(buffers, bits(models::buffer_values(&arrays)), "{name}");
    // The values are the file's, widened exactly.
    let entries = M::params(size).into_iter().chain(M::buffers(size));
    for (entry, values) in entries.zip(params.iter().chain(&buffers)) {
        let (_, file) = data.f32(&entry.name).unwrap();
        let file: Vec<u64> = file.iter().map(|&x| f64::from(x).to_bits()).collect();
        assert_eq!(values, &file, "{name}: {}", entry.name);
    }
    let (held, want) = (tensors(&stored), tensors(&arrays));
    assert_eq!(held.len(), want.len(), "{name}");
    for (k, (a, b)) in held.iter().zip(&want).enumerate() {
        assert_eq!(a, b, "{name}: tensor {k} of the module");
        assert_eq!(a.0, dtype, "{name}: tensor {k} in the device's precision");
    }
    // Burn's own parameters (the running statistics aside) track gradients, as on the
    // arrays path.
    let buffers = M::buffers(size).len();
    assert!(
        held.iter().filter(|t| t.2).count() == held.len() - buffers,
        "{name}"
    );
    if linear == LinearWeights::Arrays {
        assert_eq!(
            step(&stored, data, device),
            step(&arrays, data, device),
            "{name}"
        );
    }
}

/// The loss on the first batch of 16 in training mode and each parameter's gradient, as
/// bits.
fn step<M: ParityModel>(model: &M, data: &Dataset, device: &Device) -> (u64, Vec<Vec<u64>>) {
    let (x, y) = parity_train::train::inputs::<M::Input>(data, device).unwrap();
    let per = models::labels_per_sample(data);
    let (x, y) = (x.rows(0..16), y.slice(0..16 * per));
    let loss = CrossEntropyLossConfig::new()
        .init(device)
        .forward(model.forward(x, &mut Probe::off()), y);
    let value = loss.clone().into_scalar::<f64>().to_bits();
    let grads = GradientsParams::from_grads(loss.backward(), model);
    (value, bits(models::grad_values(model, &grads)))
}
