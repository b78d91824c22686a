//! The method registry's vocabulary: one [`Method`] per API method says what
//! it is called, which dispatch family answers it, the resource scope and
//! operation it needs, which param names what it is about (its routing key),
//! whether it opens a stream, whether the phone companion may call it,
//! whether it is local-only, and how `{fleet: true}` merges it. The entries
//! themselves are declared once, in `methods.rs`; the token policy table, the
//! routing table and the dispatcher derive from them. Pure: consts and
//! lookups, no IO.

use std::fmt;
use std::str::FromStr;

/// What a right lets its holder do (spelled in tokens as `right(RES, "observe")`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Operation {
    /// Read: agents, conversations, screens, transcripts, status.
    Observe,
    /// Put a message into a conversation (`sendMessage`).
    Inject,
    /// Raw terminal: keystrokes, resize, the raw byte stream.
    Terminal,
    /// Send mail to an agent.
    Message,
    /// Start, continue, pause, terminate conversations.
    Control,
    /// Everything, including defining agents and minting tokens.
    Admin,
    /// Supervision: nudge, answer held dialogs, change policy.
    Supervise,
    /// Use a tool: an owner-defined tool (`tool:NAME`), or an agent's own
    /// built-in stores (`agent:NAME`: stash into and forget from its recall).
    Invoke,
}

impl Operation {
    pub const ALL: [Operation; 8] = [
        Operation::Observe,
        Operation::Inject,
        Operation::Terminal,
        Operation::Message,
        Operation::Control,
        Operation::Admin,
        Operation::Supervise,
        Operation::Invoke,
    ];

    pub const fn as_str(self) -> &'static str {
        match self {
            Operation::Observe => "observe",
            Operation::Inject => "inject",
            Operation::Terminal => "terminal",
            Operation::Message => "message",
            Operation::Control => "control",
            Operation::Admin => "admin",
            Operation::Supervise => "supervise",
            Operation::Invoke => "invoke",
        }
    }
}

impl fmt::Display for Operation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Operation {
    type Err = String;
    fn from_str(s: &str) -> Result<Operation, String> {
        Operation::ALL.into_iter().find(|o| o.as_str() == s).ok_or_else(|| {
            let all: Vec<&str> = Operation::ALL.iter().map(|o| o.as_str()).collect();
            format!("unknown operation {s:?}; one of {}", all.join(", "))
        })
    }
}

/// Which resource a call acts on, taken from its params.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// The node itself (`resource("node")`).
    Node,
    /// The agent named in the params (its [`Method::agent_param`]).
    Agent,
    /// The conversation in the params, and its agent.
    Conversation,
    /// A conversation if the params name one, else an agent if they name one,
    /// else the node (lists and subscriptions that can be narrowed).
    Narrowest,
    /// The owner-defined tool named in the params (`tool`).
    Tool,
    /// The task in the params (`task`): its worker's conversation and agent.
    Task,
    /// Only the caller's own session (cancel its own subscription, inspect a
    /// token it holds): any valid token may.
    Caller,
}

/// Which member answers a call: the param that names what it is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Route {
    /// Answered by the node it is asked on.
    Here,
    /// The home of the `conversation` param when there is one, else of the
    /// `agent` param (`NAME` or `NAME@NODE`); neither: here.
    AgentOrConversation,
    /// The member this param names (by name or id); absent or this node: here.
    Node(&'static str),
    /// The home of the held dialog this param names.
    Hold(&'static str),
    /// `{scope, id}`: the agent's or conversation's home, or the member a
    /// `node` scope's id names (`usage.get`).
    ScopeId,
}

/// The dispatcher file that answers a method.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Family {
    /// Authentication, pairing, event subscriptions, cancelling a subscription.
    Session,
    Node,
    Fleet,
    Agent,
    Conversation,
    /// Transcripts and the raw terminal stream.
    Transcript,
    Supervision,
    Mail,
    /// Owner tools and the built-in recall store.
    Tools,
    Monitors,
    /// Unattended tasks (seed 001).
    Tasks,
    /// Usage, spend and budgets.
    Usage,
    Tokens,
}

/// What the phone companion may call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Companion {
    No,
    /// In the companion's read-only profile.
    Read,
    /// In its optional actions (no standing authority).
    Action,
}

/// Which tool grant adds a method to a conversation's instance token.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Grant {
    /// None: only tokens with the right rights (and every instance token
    /// when [`Method::instance`]).
    No,
    /// The built-in or monitor tool of this name (`mail`, `read`, ...).
    Tool(&'static str),
    /// Every owner-defined tool (`[tools.NAME]`).
    OwnerTool,
}

/// A call made for an agent named in its params (`param`): the agent's own
/// instance token may make it (it holds `observe` on itself), and any other
/// token needs one of `any_of` on `agent:<that agent>`. An instance token
/// never acts for another agent, whatever rights it holds on it (a peer's
/// `message` lets it mail that agent, not ack or send as it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ActsAs {
    pub param: &'static str,
    pub any_of: &'static [Operation],
}

/// A Rust type of this crate that a method's params or result are, by name.
#[derive(Clone, Copy)]
pub struct Ty {
    name: fn() -> &'static str,
}

impl Ty {
    pub const fn of<T: ?Sized>() -> Ty {
        Ty {
            name: std::any::type_name::<T>,
        }
    }

    /// The type's full path, as `std::any::type_name` spells it.
    pub fn path(&self) -> &'static str {
        (self.name)()
    }

    /// The type's own name (`AgentRef`).
    pub fn name(&self) -> &'static str {
        let p = self.path();
        p.rsplit("::").next().unwrap_or(p)
    }
}

impl fmt::Debug for Ty {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One API method, declared once.
#[derive(Debug, Clone, Copy)]
pub struct Method {
    pub name: &'static str,
    pub family: Family,
    pub scope: Scope,
    pub operation: Operation,
    /// The param naming the agent a [`Scope::Agent`] call acts on.
    pub agent_param: &'static str,
    /// Whether (and how) the call acts for an agent it names.
    pub acts_as: Option<ActsAs>,
    pub route: Route,
    /// The answer is followed by a stream of notifications.
    pub stream: bool,
    /// `{fleet: true}` merges every member's answer under this list field.
    pub fanout: Option<&'static str>,
    pub companion: Companion,
    /// Every conversation's instance token may call it (about itself).
    pub instance: bool,
    pub grant: Grant,
    /// Grants standing authority: never over the network.
    pub local_only: bool,
    /// Answered before any token is checked (the params are the credential).
    pub open: bool,
    /// May launch a CLI, and so build a guest image first (a long bound).
    pub launches: bool,
    /// False for a method in the policy table that this node does not serve
    /// yet: it passes authorization and then answers -32601.
    pub served: bool,
    /// Its params, where this crate has a type for them.
    pub params: Option<Ty>,
    /// Its result, where this crate has a type for it.
    pub result: Option<Ty>,
}

/// A method of `family` that needs `operation` on `scope`; everything else
/// off until a builder call turns it on.
pub const fn on(family: Family, scope: Scope, operation: Operation) -> Method {
    Method {
        name: "",
        family,
        scope,
        operation,
        agent_param: "agent",
        acts_as: None,
        route: Route::Here,
        stream: false,
        fanout: None,
        companion: Companion::No,
        instance: false,
        grant: Grant::No,
        local_only: false,
        open: false,
        launches: false,
        served: true,
        params: None,
        result: None,
    }
}

impl Method {
    pub const fn named(mut self, name: &'static str) -> Method {
        self.name = name;
        self
    }
    pub const fn route(mut self, route: Route) -> Method {
        self.route = route;
        self
    }
    /// Routed to the home of the conversation or agent it names.
    pub const fn routed(self) -> Method {
        self.route(Route::AgentOrConversation)
    }
    pub const fn stream(mut self) -> Method {
        self.stream = true;
        self
    }
    pub const fn fanout(mut self, list: &'static str) -> Method {
        self.fanout = Some(list);
        self
    }
    pub const fn companion_read(mut self) -> Method {
        self.companion = Companion::Read;
        self
    }
    pub const fn companion_action(mut self) -> Method {
        self.companion = Companion::Action;
        self
    }
    pub const fn instance(mut self) -> Method {
        self.instance = true;
        self
    }
    pub const fn tool(mut self, tool: &'static str) -> Method {
        self.grant = Grant::Tool(tool);
        self
    }
    pub const fn owner_tool(mut self) -> Method {
        self.grant = Grant::OwnerTool;
        self
    }
    pub const fn local_only(mut self) -> Method {
        self.local_only = true;
        self
    }
    pub const fn open(mut self) -> Method {
        self.open = true;
        self
    }
    pub const fn launches(mut self) -> Method {
        self.launches = true;
        self
    }
    pub const fn unserved(mut self) -> Method {
        self.served = false;
        self
    }
    pub const fn agent_param(mut self, param: &'static str) -> Method {
        self.agent_param = param;
        self
    }
    pub const fn acts_as(mut self, param: &'static str, any_of: &'static [Operation]) -> Method {
        self.acts_as = Some(ActsAs { param, any_of });
        self
    }
    pub const fn params<T: ?Sized>(mut self) -> Method {
        self.params = Some(Ty::of::<T>());
        self
    }
    pub const fn result<T: ?Sized>(mut self) -> Method {
        self.result = Some(Ty::of::<T>());
        self
    }
}

/// The registry's method lists, for the const views below.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Select {
    Served,
    CompanionRead,
    CompanionAction,
    LocalOnly,
    Instance,
}

const fn selected(m: &Method, s: Select) -> bool {
    match s {
        Select::Served => m.served,
        Select::CompanionRead => matches!(m.companion, Companion::Read),
        Select::CompanionAction => matches!(m.companion, Companion::Action),
        Select::LocalOnly => m.local_only,
        Select::Instance => m.instance,
    }
}

/// How many methods of `registry` are in list `s`.
pub const fn count(registry: &[Method], s: Select) -> usize {
    let (mut n, mut i) = (0, 0);
    while i < registry.len() {
        if selected(&registry[i], s) {
            n += 1;
        }
        i += 1;
    }
    n
}

/// The names of list `s`, in registry order (`N` is [`count`]'s answer).
pub const fn names<const N: usize>(registry: &[Method], s: Select) -> [&'static str; N] {
    let mut out = [""; N];
    let (mut i, mut j) = (0, 0);
    while i < registry.len() {
        if selected(&registry[i], s) {
            out[j] = registry[i].name;
            j += 1;
        }
        i += 1;
    }
    out
}
