"""gradlab's checks, one small file per family. Each is a plain function
declared with @gradlab.contract.suite.check; gradlab imports every file here."""
