"""The toolkit's version, in a module of its own so that any module can import it without the
package facade."""

__version__ = "0.1.0"
