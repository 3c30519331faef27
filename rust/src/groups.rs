//! Parameter groups in the training loop: one Burn optimizer per spec group (its optimizer,
//! hyperparameters and `keep_defaults`, the experiment's clipping) and one for the rest
//! (the experiment's optimizer), each stepping only its own parameters' gradients.
//!
//! Burn's `ModuleOptimizer::step` maps the whole module but leaves a parameter without a
//! gradient as it is (module_optimizer.rs:418–491), so optimizers given disjoint gradients
//! step disjoint parameters, each with its own state.

use std::collections::HashMap;

use burn::lr_scheduler::module_lr_scheduler::ModuleLearningRate;
use burn::module::ParamId;
use burn::optim::{GradientsParams, ModuleOptimizer};

use crate::by_hand::{LrScales, adjustment_ratio, scaled_lr, tensor_shapes};
use crate::config::{BurnFix, Optimizer, Schedule, Spec};
use crate::models::{Entry, ParityModel};
use crate::optimizers::optimizer;
use crate::runfile::{GroupMeta, Named};

/// One group's Burn optimizer and the parameters it steps.
struct Group {
    optim: ModuleOptimizer,
    /// Burn's id of each part of its parameters, with the part's rank.
    ids: Vec<(ParamId, usize)>,
    /// The lr it steps with: its own `lr` under a constant schedule, else the scheduled lr.
    own_lr: Option<f64>,
    /// Each Muon tensor's lr scale, with `muon_lr_per_parameter` (by_hand.rs); else none.
    scales: LrScales,
}

/// Every optimizer of a run: the spec's groups, in order, then the rest's.
pub struct Optimizers {
    groups: Vec<Group>,
    /// The experiment's optimizer, for the parameters in no group; None when the groups
    /// hold every parameter.
    rest: Option<ModuleOptimizer>,
    /// The rest's lr scales, as a group's.
    rest_scales: LrScales,
    /// `meta.param_groups`: each group's parameters, optimizer and held hyperparameters.
    pub meta: Vec<GroupMeta>,
    /// `meta.lr_scales`: each scaled parameter's scale per Burn tensor.
    pub lr_scales: Named<Vec<f64>>,
}

/// The lr scales of `entries` (their Burn ids beside them) under `optimizer`, when it is
/// Muon and the spec asks for `muon_lr_per_parameter`: PyTorch's factor of each parameter's
/// shape over Burn's of each tensor holding it. Also appended to `named` for the run file.
fn muon_scales(
    spec: &Spec,
    optimizer: &Optimizer,
    entries: &[(&Entry, &[ParamId])],
    shapes: &HashMap<ParamId, Vec<usize>>,
    named: &mut Vec<(String, Vec<f64>)>,
) -> LrScales {
    let Optimizer::Muon { adjust_lr_fn, .. } = optimizer else {
        return Vec::new();
    };
    if !spec.applies(BurnFix::MuonLrPerParameter) {
        return Vec::new();
    }
    let mut scales = Vec::new();
    for (entry, ids) in entries {
        let torch = adjustment_ratio(*adjust_lr_fn, &entry.shape);
        let each: Vec<f64> = ids
            .iter()
            .map(|id| torch / adjustment_ratio(*adjust_lr_fn, &shapes[id]))
            .collect();
        scales.extend(ids.iter().copied().zip(each.iter().copied()));
        named.push((entry.name.clone(), each));
    }
    scales
}

/// Burn's id of each part of each parameter, in `params` order (`param_ids()`: an entry's
/// parts' ids in a row).
fn ids_by_entry<M: ParityModel>(model: &M, params: &[Entry]) -> Vec<Vec<ParamId>> {
    let mut ids = model.param_ids().into_iter();
    params
        .iter()
        .map(|e| ids.by_ref().take(e.parts).collect())
        .collect()
}

/// Refuses a Muon optimizer given a parameter Burn's Muon cannot step (it asserts a 2-D
/// tensor, muon.rs:391): one line naming the parameter. A packed 2-D parameter (e.g. the
/// transformer's in_proj_weight, three [d, d] parts) passes, but Burn orthogonalises each
/// part on its own where PyTorch orthogonalises the whole matrix (`meta.burn_shapes`).
fn check_muon(optimizer: &Optimizer, entries: &[&Entry], whose: &str) -> Result<(), String> {
    if !matches!(optimizer, Optimizer::Muon { .. }) {
        return Ok(());
    }
    match entries.iter().find(|e| e.shape.len() != 2) {
        Some(e) => Err(format!(
            "{whose}: Burn's Muon steps 2-D parameters only, and {} is {:?}",
            e.name, e.shape
        )),
        None => Ok(()),
    }
}

impl Optimizers {
    /// The optimizers for `spec` on `model`; `rest` is the experiment's, already built.
    /// Refuses, on one line, a group naming a parameter the model lacks or one already in
    /// an earlier group, and Muon given a parameter that is not 2-D.
    pub fn new<M: ParityModel>(
        spec: &Spec,
        model: &M,
        rest: ModuleOptimizer,
    ) -> Result<Self, String> {
        let params = M::params(&model.size());
        let ids = ids_by_entry(model, &params);
        let shapes = tensor_shapes(model);
        let mut lr_scales = Vec::new();
        let mut owner: HashMap<&str, usize> = HashMap::new();
        let mut groups = Vec::with_capacity(spec.param_groups.len());
        let mut meta = Vec::with_capacity(spec.param_groups.len());
        for (i, g) in spec.param_groups.iter().enumerate() {
            let whose = format!("param_groups[{i}]");
            let mut entries = Vec::with_capacity(g.params.len());
            for name in &g.params {
                let k = params
                    .iter()
                    .position(|e| e.name == *name)
                    .ok_or_else(|| format!("{whose}: model {} has no parameter {name}", M::NAME))?;
                if let Some(j) = owner.insert(params[k].name.as_str(), i) {
                    return Err(format!("{whose}: {name} is in param_groups[{j}] already"));
                }
                entries.push(k);
            }
            let named: Vec<&Entry> = entries.iter().map(|&k| &params[k]).collect();
            check_muon(&g.optimizer, &named, &whose)?;
            let held: Vec<(&Entry, &[ParamId])> =
                entries.iter().map(|&k| (&params[k], &ids[k][..])).collect();
            let scales = muon_scales(spec, &g.optimizer, &held, &shapes, &mut lr_scales);
            let built = optimizer(&g.optimizer, &g.burn_defaults, spec.attached_clip());
            meta.push(GroupMeta {
                params: g.params.clone(),
                optimizer: g.optimizer.name().to_string(),
                hyperparameters: built.held,
            });
            groups.push(Group {
                optim: built.optim,
                ids: entries
                    .iter()
                    .flat_map(|&k| {
                        let rank = params[k].shape.len();
                        ids[k].iter().map(move |&id| (id, rank))
                    })
                    .collect(),
                own_lr: (spec.schedule == Schedule::Constant).then(|| g.optimizer.lr()),
                scales,
            });
        }
        let others: Vec<(&Entry, &[ParamId])> = params
            .iter()
            .zip(&ids)
            .filter(|(e, _)| !owner.contains_key(e.name.as_str()))
            .map(|(e, ids)| (e, &ids[..]))
            .collect();
        let named: Vec<&Entry> = others.iter().map(|(e, _)| *e).collect();
        check_muon(&spec.optimizer, &named, "optimizer")?;
        let rest_scales = muon_scales(spec, &spec.optimizer, &others, &shapes, &mut lr_scales);
        Ok(Optimizers {
            groups,
            rest: (!others.is_empty()).then_some(rest),
            rest_scales,
            meta,
            lr_scales: Named(lr_scales),
        })
    }

    /// One step of every optimizer in turn, each given its parameters' gradients (moved out
    /// of `grads`; the rest's optimizer gets what remains): a group with `lr` or its own lr
    /// (see [`Group::own_lr`]), the rest with `lr`.
    pub fn step<M: ParityModel>(
        &mut self,
        lr: &ModuleLearningRate,
        mut model: M,
        mut grads: GradientsParams,
    ) -> M {
        for g in &mut self.groups {
            let mut own = GradientsParams::new();
            for &(id, rank) in &g.ids {
                move_grad(&mut grads, &mut own, id, rank);
            }
            let group_lr = match (g.own_lr, g.scales.is_empty()) {
                (Some(own), true) => ModuleLearningRate::from(own),
                (None, true) => lr.clone(),
                (own, false) => scaled_lr(own.unwrap_or_else(|| lr.base()), &g.scales),
            };
            model = g.optim.step(group_lr, model, own);
        }
        let rest_lr = if self.rest_scales.is_empty() {
            lr.clone()
        } else {
            scaled_lr(lr.base(), &self.rest_scales)
        };
        match &mut self.rest {
            Some(rest) => rest.step(rest_lr, model, grads),
            None => model,
        }
    }
}

/// Moves the gradient of `id` (a rank-`rank` tensor, the same in Burn's layout as in
/// PyTorch's) from `from` to `to`, if it has one.
fn move_grad(from: &mut GradientsParams, to: &mut GradientsParams, id: ParamId, rank: usize) {
    fn moved<const D: usize>(from: &mut GradientsParams, to: &mut GradientsParams, id: ParamId) {
        if let Some(g) = from.remove::<D>(id) {
            to.register::<D>(id, g);
        }
    }
    match rank {
        1 => moved::<1>(from, to, id),
        2 => moved::<2>(from, to, id),
        3 => moved::<3>(from, to, id),
        4 => moved::<4>(from, to, id),
        _ => panic!("parameters of rank {rank} are not supported"),
    }
}

/// `meta.burn_shapes`: for each parameter (PyTorch's name), the shape of each Burn tensor
/// holding it, in its parts' order, read from the model's tensors (e.g. a Linear weight
/// PyTorch holds as [3, 48] is `[[48, 3]]`).
pub fn burn_shapes<M: ParityModel>(model: &M) -> Named<Vec<Vec<usize>>> {
    let shapes = tensor_shapes(model);
    let params = M::params(&model.size());
    params
        .iter()
        .zip(ids_by_entry(model, &params))
        .map(|(e, ids)| {
            let shapes = ids.iter().map(|id| shapes[id].clone()).collect();
            (e.name.as_str(), shapes)
        })
        .collect()
}
