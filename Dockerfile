# nanlog-bpf container image (docs/kubernetes.md). x86-64 only, like the build.
#
#   make image      podman, from a local Debian 12 base: no registry
#   docker build -t registry.example.com/nanlog-bpf:0.1.0 --build-arg BASE=debian:bookworm .
#
# The build stage runs the build steps CI runs, through the same script
# (scripts/ci-build.sh), and the unit tests; the end-to-end tests need root,
# BPF and uprobes, which an image build does not have, so only CI runs them.
# The runtime stage is the tool and its shared libraries on the same base.
# This file is checked by tests/e2e/test_deploy.sh; CI builds the image
# (make image) and tests/e2e/test_image.sh and test_kube_play.sh run it.

# The base of both stages: a Debian 12 image. The default is the one `make
# image` makes with mmdebstrap (minbase) and imports (scripts/image.sh), so
# no registry is needed; with one, pass --build-arg BASE=debian:bookworm.
ARG BASE=localhost/nanlog-bpf-base:bookworm
FROM ${BASE} AS build
WORKDIR /src
# the dependencies in a layer of their own: rebuilt only when the package
# list or the build script changes
COPY Makefile ./
COPY scripts/ci-build.sh scripts/deps.sh scripts/
RUN ./scripts/ci-build.sh deps
COPY . .
RUN ./scripts/ci-build.sh build unit

FROM ${BASE}
# the packages of the libraries build/nanlog-bpf links (readelf -d: NEEDED);
# tests/e2e/test_deploy.sh compares the two lists
RUN apt-get update \
	&& DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
		libbpf1 libelf1 zlib1g libcap2 libmicrohttpd12 \
	&& rm -rf /var/lib/apt/lists/*
COPY --from=build /src/build/nanlog-bpf /usr/local/bin/nanlog-bpf
# Root with the capabilities the pod grants (deploy/kubernetes/*.yaml: BPF,
# PERFMON, SYS_PTRACE and nothing else); the tool drops what it does not
# keep after attaching and sets no_new_privs.
USER 0:0
ENTRYPOINT ["/usr/local/bin/nanlog-bpf"]
CMD ["--help"]
