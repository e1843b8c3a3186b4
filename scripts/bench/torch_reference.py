"""PyTorch reference for schedrl's behaviour-cloning step (nn.Net + pretrain's loss and Adam).

The same entity network as nn/net.go, layer for layer: a shared per-node MLP encoder, a task
embedding of task + global features, node scores from the node embedding, its element-wise
product with the task embedding and the pooled (mean, max) cluster context, masked logits and a
value head; masked cross-entropy + value MSE, global-norm clipping, Adam. Inputs are random
batches of the placement observation's shape. Prints one JSON line: samples/s over timed steps.
"""
import argparse
import json
import math
import time

import torch
from torch import nn

MASKED_LOGIT = -1e9


def linear(i, o, bias=True):
    layer = nn.Linear(i, o, bias=bias)
    bound = 1 / math.sqrt(i)  # as nn/net.go initialises (uniform +-1/sqrt(in))
    nn.init.uniform_(layer.weight, -bound, bound)
    if bias:
        nn.init.uniform_(layer.bias, -bound, bound)
    return layer


class EntityNet(nn.Module):
    def __init__(self, node_dim, task_dim, global_dim, hidden, layers, head_hidden, value_scale):
        super().__init__()
        dims = [node_dim] + [hidden] * layers
        self.encoder = nn.ModuleList(linear(a, b) for a, b in zip(dims, dims[1:]))
        self.task = linear(task_dim + global_dim, hidden)
        self.score_node = linear(hidden, head_hidden, bias=False)
        self.score_interaction = linear(hidden, head_hidden, bias=False)
        self.score_context = linear(3 * hidden, head_hidden)
        self.score_out = linear(head_hidden, 1)
        self.value1 = linear(3 * hidden, head_hidden)
        self.value2 = linear(head_hidden, 1)
        self.value_scale = value_scale

    def forward(self, nodes, task, glob, mask, valid):
        h = nodes
        for enc in self.encoder:
            h = torch.relu(enc(h))
        te = torch.relu(self.task(torch.cat([task, glob], 1)))
        hv = h * valid.unsqueeze(-1)
        mean = hv.sum(1) / valid.sum(1, keepdim=True).clamp(min=1)
        context = torch.cat([te, mean, hv.amax(1)], 1)
        s = self.score_node(h) + self.score_interaction(h * te.unsqueeze(1))
        s = torch.relu(s + self.score_context(context).unsqueeze(1))
        logits = self.score_out(s).squeeze(-1).masked_fill(~mask, MASKED_LOGIT)
        value = self.value2(torch.relu(self.value1(context))).squeeze(-1) * self.value_scale
        return logits, value


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--nodes", type=int, default=1213)
    p.add_argument("--node-dim", type=int, default=13)
    p.add_argument("--task-dim", type=int, default=8)
    p.add_argument("--global-dim", type=int, default=7)
    p.add_argument("--hidden", type=int, default=32)
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--head-hidden", type=int, default=32)
    p.add_argument("--threads", type=int, default=0)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--steps", type=int, default=40)
    a = p.parse_args()
    if a.threads > 0:
        torch.set_num_threads(a.threads)
    torch.manual_seed(1)
    net = EntityNet(a.node_dim, a.task_dim, a.global_dim, a.hidden, a.layers, a.head_hidden, 50.0)
    opt = torch.optim.Adam(net.parameters(), lr=1e-3, betas=(0.9, 0.999), eps=1e-8)
    b, n = a.batch, a.nodes
    nodes = torch.rand(b, n, a.node_dim)
    task, glob = torch.rand(b, a.task_dim), torch.rand(b, a.global_dim)
    mask = torch.rand(b, n) < 0.5
    mask[:, 0] = True
    valid = torch.ones(b, n)
    action = torch.zeros(b, 1, dtype=torch.long)  # node 0 is always feasible
    rtg = torch.rand(b) * 50

    def step():
        opt.zero_grad()
        logits, value = net(nodes, task, glob, mask, valid)
        ce = -torch.log_softmax(logits, 1).gather(1, action).mean()
        vloss = torch.nn.functional.mse_loss(value / 50.0, rtg / 50.0)
        (ce + 0.5 * vloss).backward()
        torch.nn.utils.clip_grad_norm_(net.parameters(), 1.0)
        opt.step()

    for _ in range(a.warmup):
        step()
    start = time.perf_counter()
    for _ in range(a.steps):
        step()
    secs = time.perf_counter() - start
    print(json.dumps({"impl": "pytorch " + torch.__version__, "threads": torch.get_num_threads(), "batch": b,
                      "nodes": n, "steps": a.steps, "seconds": round(secs, 3),
                      "samples_per_s": round(a.steps * b / secs, 1)}))


if __name__ == "__main__":
    main()
