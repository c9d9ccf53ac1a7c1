# frozen_string_literal: true

require_relative "../attachments/selection"

module LlmFailover
  class Chat
    # Chat's attachments (included in Chat): the files given to #ask checked against
    # the chat's targets, and a stored message's attachments read back in canonical
    # form for the next call.
    module ChatAttachments
      private

      def attachments_for(with)
        Attachment::Selection.prepare(with, targets: engine_targets, allow_private: @config.attachment_private_hosts)
      end

      # A stored message's attachments in canonical form (an ActiveStorage attachment
      # list of a record reads as blobs).
      def stored_attachments(message)
        store = @store
        return store.attachments_of(message) if store.respond_to?(:attachments_of)
        return [] unless message.respond_to?(:attachments)

        list = message.attachments
        return list if list.is_a?(Array) && list.all?(Attachment) # MemoryStore's: canonical already

        list.map { |a| Attachment.from(a) }
      end
    end
  end
end
