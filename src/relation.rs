//! The vocabulary of the analysis: the relations cprace decides races for,
//! the engines that compute them, and the one table of which engines each
//! relation has. Everything that dispatches on an engine or names one in a
//! report uses these types.

use std::fmt;

/// The relations cprace decides races for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum Relation {
    /// Thread order only: every conflicting cross-thread pair races (upper bound).
    Po,
    /// Happens-before (Java memory model): program order, release -> later
    /// acquire, fork/join, volatile write -> later read. Sound and precise.
    Hb,
    /// Eraser's lockset discipline (unsound: violations, not proven races).
    Lockset,
    /// Causally-precedes (Smaragdakis, Evans, Sadowski, Yi, Flanagan, POPL
    /// 2012), windowed.
    Cp,
    /// Weak-causally-precedes (Kini, Mathur, Viswanathan, PLDI 2017): weaker
    /// than CP, so every CP race is a
    /// WCP race; linear-time vector clocks.
    Wcp,
    /// Schedulable happens-before (OOPSLA 2018): HB plus reads-from edges;
    /// every race it reports is a predictable race.
    Shb,
    /// Sync-preserving races (POPL 2021): exactly the races some reordering
    /// keeping every lock's critical sections in order exhibits.
    Syncp,
    /// Not a race relation: the reports of `cprace deadlocks`.
    #[cfg_attr(feature = "clap", value(skip))]
    Deadlock,
}

/// The engines computing the relations. Which relation has which is
/// [`Relation::engines`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum Engine {
    /// Vector clocks: DJIT+ for hb (exact), Algorithm 1 of the WCP paper for
    /// wcp, HB's clocks plus reads-from edges for shb.
    Vc,
    /// FastTrack2's epochs (hb): same racy variables and first race per
    /// variable as `vc`.
    Epoch,
    /// Goldilocks' lazily evaluated locksets (hb): same guarantee as `epoch`.
    Lockset,
    /// `vc` with the tree clocks of Mathur et al. (hb): same races as `vc`.
    #[cfg_attr(feature = "clap", value(name = "treeclock", alias = "tc"))]
    TreeClock,
    /// Datafrog: CP's semi-naive fixpoint over synchronization events, HB's
    /// closure over them.
    Datalog,
    /// The literal rules of `rules/*.dl` evaluated by crepe over every event
    /// pair (small traces only): the engines the others are checked against.
    Reference,
    /// CP's `datalog` and `reference` engines both, failing where they
    /// disagree.
    Compare,
    /// Eraser's lockset discipline check (lockset).
    Eraser,
    /// Every conflicting pair, in one streaming pass (po).
    Stream,
    /// Sync-preserving closures of each race's two events (syncp).
    Closure,
    /// Sync-preserving deadlock prediction over a window (`cprace deadlocks`).
    #[cfg_attr(feature = "clap", value(skip))]
    Spd,
}

impl Relation {
    /// The name used in reports.
    pub fn name(self) -> &'static str {
        match self {
            Relation::Po => "po",
            Relation::Hb => "hb",
            Relation::Lockset => "lockset",
            Relation::Cp => "cp",
            Relation::Wcp => "wcp",
            Relation::Shb => "shb",
            Relation::Syncp => "syncp",
            Relation::Deadlock => "deadlock",
        }
    }

    /// The engines of this relation, the default first.
    pub fn engines(self) -> &'static [Engine] {
        use Engine::*;
        match self {
            Relation::Po => &[Stream],
            Relation::Hb => &[Vc, Epoch, Lockset, TreeClock, Datalog, Reference],
            Relation::Lockset => &[Eraser],
            Relation::Cp => &[Datalog, Reference, Compare],
            Relation::Wcp => &[Vc, Reference],
            Relation::Shb => &[Vc],
            Relation::Syncp => &[Closure],
            Relation::Deadlock => &[Spd],
        }
    }

    /// The engine to run: `requested` when this relation has it, else a
    /// usage error listing the ones it has; the default when None.
    pub fn engine(self, requested: Option<Engine>) -> crate::Result<Engine> {
        let available = self.engines();
        match requested {
            None => Ok(available[0]),
            Some(e) if available.contains(&e) => Ok(e),
            Some(e) => Err(crate::Error::Usage(format!(
                "relation `{self}` has no engine `{e}`; expected one of: {}",
                available
                    .iter()
                    .map(|e| e.name())
                    .collect::<Vec<_>>()
                    .join(", ")
            ))),
        }
    }
}

impl Engine {
    /// The name used in reports and on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Engine::Vc => "vc",
            Engine::Epoch => "epoch",
            Engine::Lockset => "lockset",
            Engine::TreeClock => "treeclock",
            Engine::Datalog => "datalog",
            Engine::Reference => "reference",
            Engine::Compare => "compare",
            Engine::Eraser => "eraser",
            Engine::Stream => "stream",
            Engine::Closure => "closure",
            Engine::Spd => "spd",
        }
    }
}

impl fmt::Display for Relation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl fmt::Display for Engine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_engine_belongs_to_some_relation_and_names_are_distinct() {
        let mut names = std::collections::HashSet::new();
        let all = [
            Relation::Po,
            Relation::Hb,
            Relation::Lockset,
            Relation::Cp,
            Relation::Wcp,
            Relation::Shb,
            Relation::Syncp,
        ];
        for r in all {
            assert!(names.insert(r.name()), "{r}");
            assert!(!r.engines().is_empty(), "{r}");
            assert_eq!(r.engine(None).unwrap(), r.engines()[0]);
        }
        let used: std::collections::HashSet<Engine> = all
            .iter()
            .flat_map(|r| r.engines().iter().copied())
            .collect();
        assert_eq!(used.len(), 10, "an engine no relation has");
    }

    #[test]
    fn an_engine_of_another_relation_is_refused_with_the_list() {
        let e = Relation::Wcp.engine(Some(Engine::Epoch)).unwrap_err();
        assert_eq!(
            e.to_string(),
            "relation `wcp` has no engine `epoch`; expected one of: vc, reference"
        );
    }
}
