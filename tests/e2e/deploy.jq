# Definitions for tests/e2e/test_deploy.sh: the input is one manifest file as
# an array of its documents (yq -c . FILE | jq -s).

# the objects that hold a pod template, and the template's spec and metadata
def workloads: .[] | select(.kind == "Pod" or .kind == "DaemonSet" or .kind == "Deployment"
	or .kind == "Job" or .kind == "StatefulSet");
def podspec: if .kind == "Pod" then .spec else .spec.template.spec end;
def podmeta: if .kind == "Pod" then .metadata else .spec.template.metadata end;

# the nanlog-bpf container of a workload (its image is .../nanlog-bpf:TAG),
# a container or a native sidecar (an init container), and the others
def is_tool: (.image // "") | test("(^|/)nanlog-bpf:[^/]+$");
def all_containers: podspec | (.initContainers // []) + (.containers // []) | .[];
def tool: all_containers | select(is_tool);
def others: all_containers | select(is_tool | not);

# the tool's arguments (of the file's nanlog-bpf containers), "--opt=value"
# split in two
def args: [workloads | tool.args[]? | if test("^--[a-z-]+=") then (capture("^(?<o>--[a-z-]+)=(?<v>.*)$") | .o, .v)
	else . end];
def has_flag($f): args | index([$f]) != null;
def argval($f): args as $a | ($a | index([$f])) as $i | if $i == null then null else $a[$i + 1] end;
def metrics_addr: argval("--metrics");
def metrics_port: metrics_addr | capture(":(?<p>[0-9]+)$").p | tonumber;
def container_port: [workloads | tool.ports[]? | select(.name == "metrics") | .containerPort][0];
def annotation($k): [workloads | podmeta.annotations[$k]][0];

def caps: [workloads | tool.securityContext.capabilities];
# every "privileged" setting anywhere in the file
def privileged_settings: [.. | objects | select(has("privileged")) | .privileged];
# the command name a container's process gets: the executable's file name,
# cut to 15 characters, as /proc/PID/comm shows it
def comm_of: ((.command // .args)[0] // "") | split("/") | last | .[0:15];
# matchLabels $sel are all among $labels
def selects($sel; $labels): $sel | to_entries | all(. as $e | $labels[$e.key] == $e.value);
