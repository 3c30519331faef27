//! What the trainer records of its tensors, step by step (the Python side's `RunRecorder`,
//! src/torch_burn_parity/io/run_tensors.py): into the run's tensors file when it has a run
//! file (the binary), else into the run block's inline lists (a test's run without files);
//! or nothing at all (a bare run: the training alone, timed).
//!
//! The file's keys, PyTorch's names and layouts, in the model's order:
//! `params/{name}`, `buffers/{name}` (after the last step), `trajectory/{params,grads,
//! buffers}/{name}` ([S, *shape], S = len(`record_steps`), row i after step
//! `record_steps[i]`), then each probe step's `layers/{step}/{outputs,input_grads}/{k}`
//! (flat), as they come. Besides, the norms of every parameter and gradient at every step
//! (the run block's `norms`), held until the end: one f64 per parameter per step.

use std::path::Path;

use crate::measured::{Floats, LayerRecord};
use crate::models::Entry;
use crate::runfile::{Named, Norms, RunTensors, TensorsFile, Trajectory};
use crate::tensors::{Dtype, TensorWriter, tensors_path};

/// Where a run's tensors go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Output<'a> {
    /// Into the run block's inline lists (a run without files: tests).
    Inline,
    /// Into the tensors file beside this run file (the binary).
    File(&'a Path),
    /// Nowhere: no trajectory, no layer record, no norms (`parity-train --bare`).
    Bare,
}

impl<'a> From<Option<&'a Path>> for Output<'a> {
    /// A run file's tensors file, or inline without one.
    fn from(out: Option<&'a Path>) -> Output<'a> {
        out.map_or(Output::Inline, Output::File)
    }
}

/// A trajectory: of the parameters, their gradients, or the buffers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Params = 0,
    Grads = 1,
    Buffers = 2,
}

impl Kind {
    fn key(self) -> &'static str {
        match self {
            Kind::Params => "params",
            Kind::Grads => "grads",
            Kind::Buffers => "buffers",
        }
    }
}

enum Sink {
    /// Per kind, per tensor, one list per recorded step.
    Inline([Vec<Vec<Floats>>; 3]),
    File {
        writer: Box<TensorWriter>,
        /// The file's name, beside the run file.
        name: String,
        dtype: Dtype,
        /// The run file: an older one is removed before the new tensors file takes its
        /// place, so a crash between the two renames never pairs new tensors with an old run.
        run_file: std::path::PathBuf,
    },
    Bare,
}

/// What a run recorded, for its run block.
pub struct Recorded {
    pub tensors: RunTensors,
    pub layers: Vec<LayerRecord>,
    /// None in a bare run.
    pub norms: Option<Norms>,
}

/// One run's recorder. Dropped before [`Recorder::finish`] (a failed run), it leaves no
/// tensors file.
pub struct Recorder {
    params: Vec<String>,
    buffers: Vec<String>,
    /// The recorded steps (1-based, sorted, distinct, each ≤ the run's steps): the rows.
    record_steps: Vec<usize>,
    /// The steps with a layer record (1-based, sorted, distinct, each ≤ the run's steps).
    probe_steps: Vec<usize>,
    layers: Vec<LayerRecord>,
    /// Per parameter, its norm and its gradient's at each step so far.
    norms: [Vec<Vec<f64>>; 2],
    sink: Sink,
}

impl Recorder {
    /// A recorder of a run of `steps` steps of a model's `params` and `buffers` (PyTorch's
    /// names and shapes) into `output` (a tensors file in precision `dtype`): a trajectory
    /// row at each of `record_steps` (sorted, distinct, in 1..=`steps`, as config.rs
    /// checks them), a layer record of `layer_count` layers at each of `probe_steps` up to
    /// `steps`, and the norms at every step; nothing of these for [`Output::Bare`].
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        output: Output,
        dtype: Dtype,
        params: &[Entry],
        buffers: &[Entry],
        steps: usize,
        record_steps: &[usize],
        probe_steps: &[usize],
        layer_count: usize,
    ) -> Result<Recorder, String> {
        let names = |entries: &[Entry]| entries.iter().map(|e| e.name.clone()).collect();
        if !record_steps.is_sorted_by(|a, b| a < b)
            || record_steps.iter().any(|s| !(1..=steps).contains(s))
        {
            return Err(format!(
                "record_steps {record_steps:?}: not steps of 1..={steps}, sorted, without repeats"
            ));
        }
        let (record_steps, mut probes): (Vec<usize>, Vec<usize>) = if output == Output::Bare {
            (Vec::new(), Vec::new())
        } else {
            let probes = probe_steps.iter().copied();
            let probes = probes.filter(|&s| (1..=steps).contains(&s)).collect();
            (record_steps.to_vec(), probes)
        };
        probes.sort_unstable();
        probes.dedup();
        let sink = match output {
            Output::Bare => Sink::Bare,
            Output::Inline => Sink::Inline([params.len(), params.len(), buffers.len()].map(|n| {
                (0..n)
                    .map(|_| Vec::with_capacity(record_steps.len()))
                    .collect()
            })),
            Output::File(out) => {
                let path = tensors_path(out);
                if path == out {
                    return Err(format!(
                        "{}: a run file cannot be its own tensors file",
                        out.display()
                    ));
                }
                let shape = |e: &Entry| e.shape.clone();
                let rows = |e: &Entry| [vec![record_steps.len()], e.shape.clone()].concat();
                let mut declared: Vec<(String, Vec<usize>)> = Vec::new();
                declared.extend(
                    params
                        .iter()
                        .map(|e| (format!("params/{}", e.name), shape(e))),
                );
                declared.extend(
                    buffers
                        .iter()
                        .map(|e| (format!("buffers/{}", e.name), shape(e))),
                );
                for (kind, entries) in [("params", params), ("grads", params), ("buffers", buffers)]
                {
                    declared.extend(
                        entries
                            .iter()
                            .map(|e| (format!("trajectory/{kind}/{}", e.name), rows(e))),
                    );
                }
                let late: Vec<String> = probes
                    .iter()
                    .flat_map(|step| {
                        ["outputs", "input_grads"]
                            .into_iter()
                            .flat_map(move |field| {
                                (0..layer_count).map(move |k| format!("layers/{step}/{field}/{k}"))
                            })
                    })
                    .collect();
                let name = path
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default();
                Sink::File {
                    writer: Box::new(TensorWriter::create(&path, &declared, dtype, &late)?),
                    name,
                    dtype,
                    run_file: out.to_path_buf(),
                }
            }
        };
        let norms = if output == Output::Bare { 0 } else { steps };
        Ok(Recorder {
            params: names(params),
            buffers: names(buffers),
            record_steps,
            probe_steps: probes,
            layers: Vec::new(),
            norms: [(); 2].map(|()| {
                (0..params.len())
                    .map(|_| Vec::with_capacity(norms))
                    .collect()
            }),
            sink,
        })
    }

    /// Whether the trajectories have a row of 1-based `step` (never in a bare run): the
    /// trainer reads the tensors back for [`Recorder::row`] at those steps only.
    pub fn records(&self, step: usize) -> bool {
        self.record_steps.binary_search(&step).is_ok()
    }

    /// Whether 1-based `step` has a layer record (never in a bare run).
    pub fn probes(&self, step: usize) -> bool {
        self.probe_steps.binary_search(&step).is_ok()
    }

    /// Whether the run records the norms at every step (every run but a bare one).
    pub fn keeps_norms(&self) -> bool {
        !matches!(self.sink, Sink::Bare)
    }

    /// Trajectory `kind` of the `k`th parameter or buffer after 1-based `step`, one of the
    /// recorded steps ([`Recorder::records`]).
    pub fn row(
        &mut self,
        kind: Kind,
        k: usize,
        step: usize,
        values: Vec<f64>,
    ) -> Result<(), String> {
        let names = match kind {
            Kind::Params | Kind::Grads => &self.params,
            Kind::Buffers => &self.buffers,
        };
        let row = self
            .record_steps
            .binary_search(&step)
            .map_err(|_| format!("step {step} is not one of record_steps"))?;
        match &mut self.sink {
            Sink::Inline(lists) => {
                let list = &mut lists[kind as usize][k];
                if list.len() != row {
                    return Err(format!(
                        "trajectory/{}/{}: step {step} out of order",
                        kind.key(),
                        names[k]
                    ));
                }
                list.push(Floats(values));
                Ok(())
            }
            Sink::File { writer, .. } => {
                let key = format!("trajectory/{}/{}", kind.key(), names[k]);
                writer.write_row(&key, row, &values)
            }
            Sink::Bare => Err("a bare run records no trajectory".into()),
        }
    }

    /// One step's norms of each parameter (`Kind::Params`) or gradient (`Kind::Grads`), in
    /// the model's order; the steps in order, each once (ignored in a bare run).
    pub fn norms(&mut self, kind: Kind, norms: Vec<f64>) {
        if !self.keeps_norms() {
            return;
        }
        let i = match kind {
            Kind::Params => 0,
            Kind::Grads => 1,
            Kind::Buffers => panic!("no norms of the buffers"),
        };
        assert_eq!(norms.len(), self.params.len(), "a norm per parameter");
        for (series, x) in self.norms[i].iter_mut().zip(norms) {
            series.push(x);
        }
    }

    /// One probe step's layer record.
    pub fn layer(&mut self, mut record: LayerRecord) -> Result<(), String> {
        match &mut self.sink {
            Sink::Bare => return Err("a bare run records no layer".into()),
            Sink::Inline(_) => {}
            Sink::File { writer, .. } => {
                let values = record.values.take().expect("a record with its values");
                for (field, lists) in [
                    ("outputs", values.outputs),
                    ("input_grads", values.input_grads),
                ] {
                    for (k, list) in lists.into_iter().enumerate() {
                        writer.add(&format!("layers/{}/{field}/{k}", record.step), &list.0)?;
                    }
                }
            }
        }
        self.layers.push(record);
        Ok(())
    }

    /// The run block's tensors, layer records and norms, given the parameters and buffers
    /// after the last step (in the model's order; unused in a bare run); the tensors file
    /// is then in place.
    pub fn finish(self, params: Vec<Vec<f64>>, buffers: Vec<Vec<f64>>) -> Result<Recorded, String> {
        fn named<T>(names: &[String], values: impl IntoIterator<Item = T>) -> Named<T> {
            names.iter().map(String::as_str).zip(values).collect()
        }
        let [param_norms, grad_norms] = self.norms;
        let norms = Norms {
            params: named(&self.params, param_norms.into_iter().map(Floats)),
            grads: named(&self.params, grad_norms.into_iter().map(Floats)),
        };
        let tensors = match self.sink {
            Sink::Bare => {
                return Ok(Recorded {
                    tensors: RunTensors::Bare {},
                    layers: Vec::new(),
                    norms: None,
                });
            }
            Sink::Inline([traj_params, traj_grads, traj_buffers]) => RunTensors::Inline {
                params: named(&self.params, params.into_iter().map(Floats)),
                buffers: named(&self.buffers, buffers.into_iter().map(Floats)),
                trajectory: Trajectory {
                    params: named(&self.params, traj_params),
                    grads: named(&self.params, traj_grads),
                    buffers: named(&self.buffers, traj_buffers),
                },
            },
            Sink::File {
                mut writer,
                name,
                dtype,
                run_file,
            } => {
                for (kind, names, values) in [
                    ("params", &self.params, params),
                    ("buffers", &self.buffers, buffers),
                ] {
                    for (name, values) in names.iter().zip(values) {
                        writer.write(&format!("{kind}/{name}"), &values)?;
                    }
                }
                match std::fs::remove_file(&run_file) {
                    Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                        return Err(format!("{}: {e}", run_file.display()));
                    }
                    _ => {}
                }
                RunTensors::File {
                    tensors: TensorsFile {
                        file: name,
                        dtype: dtype.name(),
                        steps: self.record_steps,
                        bytes: (*writer).close()?,
                    },
                }
            }
        };
        Ok(Recorded {
            tensors,
            layers: self.layers,
            norms: Some(norms),
        })
    }
}
