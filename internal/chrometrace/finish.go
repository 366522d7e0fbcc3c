package chrometrace

import (
	"errors"
	"fmt"

	"github.com/google/pprof/profile"
	"github.com/hotbudget/hotbudget/internal/pbuild"
)

// labels returns the shared label set of one thread (and profile id).
func (p *parser) labels(pid, tid, prof string) pbuild.Labels {
	return pbuild.NewLabels(
		pbuild.LabelPID, pid,
		pbuild.LabelTID, tid,
		pbuild.LabelProcess, p.procs[pid],
		pbuild.LabelThread, p.names[key2(pid, tid)],
		pbuild.LabelProfile, prof,
	)
}

// finish builds the profile of the chosen view.
func (p *parser) finish(view string) (*profile.Profile, error) {
	nSamples := 0
	for _, cp := range p.profs.order {
		nSamples += cp.samples.n + len(cp.nodes)
	}
	if p.hermes != nil {
		nSamples += len(p.hermes.samples)
	}
	nDur := p.durCount
	switch view {
	case "":
		view = pbuild.ViewSamples
		if nSamples == 0 {
			view = pbuild.ViewDurations
		}
	case pbuild.ViewSamples:
		if nSamples == 0 && nDur > 0 {
			p.warnf("the trace has no CPU samples: showing its %d duration events instead", nDur)
			view = pbuild.ViewDurations
		}
	case pbuild.ViewDurations:
		if nDur == 0 && nSamples > 0 {
			p.warnf("the trace has no duration events (X, B/E): showing its CPU samples instead")
			view = pbuild.ViewSamples
		}
	}
	if nSamples == 0 && nDur == 0 {
		return nil, fmt.Errorf("no CPU samples and no duration events in %d trace events", p.n)
	}
	if view == pbuild.ViewSamples {
		return p.finishSamples()
	}
	return p.finishDurations()
}

func (p *parser) addWarnings(b *pbuild.Builder) {
	for _, w := range p.warns {
		if n := p.warnN[w]; n > 1 {
			b.Warnf("%s (%d times)", w, n)
		} else {
			b.Warnf("%s", w)
		}
	}
}

func (p *parser) finishSamples() (*profile.Profile, error) {
	b := pbuild.New(pbuild.Sampled)
	b.SetMeter(p.meter)
	p.addWarnings(b)
	var period, start, end int64
	most, first := -1, true
	for _, cp := range p.profs.order {
		if cp.samples.n == 0 && len(cp.nodes) == 0 {
			b.Warnf("profile %s of pid %s has no samples", cp.id, cp.pid)
			continue
		}
		tid := cp.tid
		if !cp.hasHead {
			tid = cp.chunkTid
			b.Warnf("profile %s of pid %s has no Profile event: its thread is taken from its chunks (tid %s)", cp.id, cp.pid, tid)
		}
		id := cp.id
		if cp.old {
			id = ""
		}
		n := cp.samples.n
		span, err := p.buildProfile(b, cp, p.labels(cp.pid, tid, id))
		if err != nil {
			return nil, fmt.Errorf("profile %s of pid %s: %w", cp.id, cp.pid, err)
		}
		if n > most {
			most, period = n, span.Period
		}
		if span.Samples > 0 || span.Nanos > 0 {
			s, e := span.Start*1000, span.Start*1000+span.Nanos
			if first {
				start, end, first = s, e, false
			}
			start, end = min(start, s), max(end, e)
		}
	}
	if p.hermes != nil {
		span, err := p.hermes.build(b, p)
		if err != nil {
			return nil, err
		}
		if most < 0 {
			period = span.Period
		}
		if span.Samples > 0 {
			s, e := span.Start*1000, span.Start*1000+span.Nanos
			if first {
				start, end, first = s, e, false
			}
			start, end = min(start, s), max(end, e)
		}
	}
	return b.Finish(Format, period, end-start)
}

func (p *parser) finishDurations() (*profile.Profile, error) {
	b := pbuild.New(pbuild.Exact)
	b.SetMeter(p.meter)
	p.addWarnings(b)
	var start, end int64
	first := true
	for _, t := range p.threads.order {
		if len(t.evs) == 0 {
			continue
		}
		w := &sweep{b: b, t: t, labels: p.labels(t.pid, t.tid, "")}
		if err := w.run(); err != nil {
			return nil, err
		}
		if first {
			start, end, first = w.min, t.last, false
		}
		start, end = min(start, w.min), max(end, t.last)
		t.evs = nil
	}
	if first {
		return nil, errors.New("no duration events")
	}
	return b.Finish(Format, 0, end-start)
}
