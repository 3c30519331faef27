# The user's original train_both.py (from the seed notes), kept unchanged as a test fixture:
# tests/test_compare.py runs it and feeds its output to compare.py. Do not edit or reformat it.

# 一维小 CNN 在合成数据上训练 100 步（SGD 和 Adam 各一次），输出每步 loss 和最后的参数
import json, math, sys
import torch
from torch import nn

N, LEN, CLASSES, BATCH, STEPS = 96, 16, 3, 16, 100
CH, K = 4, 5
FLAT = CH * (LEN - K + 1)  # 4 * 12 = 48

def data():
  # 先在 f64 里算，最后舍入成 f32 一次；burn 侧同样的公式、同样的顺序
  xs, ys = [], []
  for k in range(N):
    c = k % CLASSES
    f = 0.3 * (c + 1)
    xs.append([[math.sin(f * t + 0.37 * k) + 0.3 * math.sin(2.3 * t + 1.1 * k) for t in range(LEN)]])
    ys.append(c)
  return torch.tensor(xs, dtype=torch.float32), torch.tensor(ys)

class Cnn(nn.Module):
  def __init__(self):
    super().__init__()
    self.conv = nn.Conv1d(1, CH, K)
    self.fc = nn.Linear(FLAT, CLASSES)

  def forward(self, x):
    return self.fc(torch.relu(self.conv(x)).flatten(1))

def build():
  m = Cnn()
  with torch.no_grad():
    # conv.weight [out, in, k]，fc.weight [out, in]：按下标 i 生成，两边相同
    m.conv.weight.copy_(torch.tensor([0.4 * math.sin(i + 1) for i in range(CH * K)]).reshape(CH, 1, K))
    m.conv.bias.copy_(torch.tensor([0.02 * o - 0.03 for o in range(CH)]))
    m.fc.weight.copy_(torch.tensor([0.15 * math.cos(i + 1) for i in range(CLASSES * FLAT)]).reshape(CLASSES, FLAT))
    m.fc.bias.zero_()
  return m

def train(make_opt):
  x, y = data()
  model = build()
  opt = make_opt(model.parameters())
  losses = []
  for step in range(STEPS):
    i = (step % (N // BATCH)) * BATCH  # 不打乱，6 个批轮流用
    loss = nn.functional.cross_entropy(model(x[i:i + BATCH]), y[i:i + BATCH])
    losses.append(loss.item())
    opt.zero_grad()
    loss.backward()
    opt.step()
  with torch.no_grad():
    out = model(x)
    final = {
      "loss": nn.functional.cross_entropy(out, y).item(),
      "correct": (out.argmax(1) == y).sum().item(),
    }
  params = {n: p.tolist() for n, p in model.named_parameters()}
  return {"losses": losses, "final": final, "params": params}

json.dump({
  "sgd": train(lambda p: torch.optim.SGD(p, lr=0.5)),
  "adam": train(lambda p: torch.optim.Adam(p, lr=0.01, eps=1e-8)),
}, sys.stdout)
