# frozen_string_literal: true

require "cgi/escape" # CGI.escapeHTML alone: Ruby 4.0 keeps only this part of cgi

module LlmFailover
  class Report
    # Builds HTML (and the SVG inside it) where every text and attribute value is
    # escaped: the report shows provider names, models, features and error classes read
    # from the database, and any of them may hold markup. The only unescaped input is
    # #raw, for the page's own constant CSS.
    #
    #   m = Markup.new
    #   m.tag(:p, class: "note") { m.text(feature) }
    #   m.to_s
    class Markup
      VOID = %i[meta br col].freeze

      def initialize
        @html = +""
      end

      # An element. Attribute names are written with dashes for underscores
      # (aria_label: -> aria-label); a nil attribute is left out.
      # @param text [Object, nil] the element's text, escaped
      # @yield the element's children
      # @return [self]
      def tag(name, text = nil, **attributes)
        @html << "<" << name.to_s
        attributes.each do |key, value|
          @html << " " << key.to_s.tr("_", "-") << '="' << escape(value) << '"' unless value.nil?
        end
        @html << ">"
        return self if VOID.include?(name)

        @html << escape(text) unless text.nil?
        yield if block_given?
        @html << "</" << name.to_s << ">"
        self
      end

      # @return [self]
      def text(value)
        @html << escape(value)
        self
      end

      # Markup written by this gem, never data.
      # @return [self]
      def raw(html)
        @html << html
        self
      end

      # @return [String]
      def to_s
        @html
      end

      private

      # Whatever encoding the database hands back becomes valid UTF-8 before escaping
      # (bytes without one are read as UTF-8; what is invalid becomes U+FFFD).
      def escape(value)
        text = value.to_s
        text = if text.encoding == Encoding::BINARY then text.dup.force_encoding(Encoding::UTF_8)
               else text.encode(Encoding::UTF_8, invalid: :replace, undef: :replace)
               end
        CGI.escapeHTML(text.scrub)
      end
    end
  end
end
