# Stand-in for nixpkgs used by flake-eval.nix: every builder returns a fake derivation, so the
# flake's wiring (outputs, apps, attribute names, interpolations) evaluates offline on Nix 2.8.
{ system ? "x86_64-linux" }:
let
  drv = name: {
    type = "derivation";
    inherit name system;
    outPath = "/nix/store/00000000000000000000000000000000-${name}";
  };
  lib = {
    fileset = {
      toSource = { root, fileset }: assert builtins.isList fileset; drv "source";
      unions = l: l;
    };
    makeBinPath = l: builtins.concatStringsSep ":" (map (p: "${p}/bin") l);
  };
  named = names: builtins.listToAttrs (map (n: { name = n; value = drv n; }) names);
in
named [ "pkg-config" "cmake" "unzip" "autoPatchelfHook" "makeWrapper" "git" "uv" "docker-client"
        "rust-analyzer" "bashInteractive" "coreutils" "cacert" ]
// {
  inherit lib;
  rustPlatform.bindgenHook = drv "bindgenHook";
  stdenv = {
    mkDerivation = a: assert a ? pname && a ? version && a ? src; drv "${a.pname}-${a.version}";
    cc.cc.lib = drv "gcc-lib";
  };
  python3Packages.fetchPypi = a:
    assert a.format == "wheel" && builtins.substring 0 7 a.hash == "sha256-";
    drv "${a.pname}-${a.version}-${a.python}-${a.abi}-${a.platform}.whl";
  fetchurl = a: assert a ? url && a ? hash; drv (baseNameOf a.url);
  symlinkJoin = a: assert a ? paths && a ? postBuild; drv a.name;
  # The script text is folded into the fake store path so a check can read it back.
  writeShellScript = name: text: assert builtins.isString text; drv name // { outPath = "/mock/${name}#${text}"; };
  dockerTools = {
    buildLayeredImage = a: assert a.config ? Cmd; drv "docker-image-${a.name}.tar.gz" // { inherit (a) config; };
    fakeNss = drv "fake-nss";
  };
}
