# Stand-in for nixpkgs used by flake-eval.nix: every builder returns a fake derivation, so the
# flake's wiring (outputs, apps, attribute names, interpolations) evaluates offline on Nix 2.8.
# Each fake derivation carries the system it was imported for, and the builders keep the
# arguments a check reads back (a fetch's url and hash, a derivation's phases and inputs).
{ system ? "x86_64-linux" }:
let
  drv = name: {
    type = "derivation";
    inherit name system;
    outPath = "/nix/store/00000000000000000000000000000000-${name}";
  };
  isDarwin = builtins.match ".*-darwin" system != null;
  lib = {
    fileset = {
      toSource = { root, fileset }: assert builtins.isList fileset; drv "source";
      unions = l: l;
    };
    makeBinPath = l: builtins.concatStringsSep ":" (map (p: "${p}/bin") l);
    optionals = cond: l: if cond then l else [ ];
    optionalAttrs = cond: a: if cond then a else { };
  };
  named = names: builtins.listToAttrs (map (n: { name = n; value = drv n; }) names);
in
named [ "pkg-config" "cmake" "unzip" "autoPatchelfHook" "makeWrapper" "git" "uv" "docker-client"
        "rust-analyzer" "bashInteractive" "coreutils" "cacert" "libiconv" ]
// {
  inherit lib;
  rustPlatform.bindgenHook = drv "bindgenHook";
  stdenv = {
    inherit isDarwin;
    hostPlatform = { inherit system; };
    isLinux = builtins.match ".*-linux" system != null;
    mkDerivation = a: assert a ? pname && a ? version && a ? src;
      drv "${a.pname}-${a.version}" // {
        inherit (a) src unpackPhase installPhase;
        nativeBuildInputs = map (d: d.name) (a.nativeBuildInputs or [ ]);
        buildInputs = map (d: d.name) (a.buildInputs or [ ]);
      };
    cc.cc.lib = drv "gcc-lib";
  };
  python3Packages.fetchPypi = a:
    assert a.format == "wheel" && builtins.substring 0 7 a.hash == "sha256-";
    drv "${a.pname}-${a.version}-${a.python}-${a.abi}-${a.platform}.whl";
  fetchurl = a: assert a ? url && builtins.substring 0 7 a.hash == "sha256-";
    drv (baseNameOf a.url) // { inherit (a) url hash; };
  symlinkJoin = a: assert a ? paths && a ? postBuild; drv a.name;
  # The script text is folded into the fake store path so a check can read it back.
  writeShellScript = name: text: assert builtins.isString text; drv name // { outPath = "/mock/${name}#${text}"; };
  dockerTools = {
    buildLayeredImage = a: assert a.config ? Cmd && !isDarwin; drv "docker-image-${a.name}.tar.gz" // { inherit (a) config; };
    fakeNss = drv "fake-nss";
  };
}
